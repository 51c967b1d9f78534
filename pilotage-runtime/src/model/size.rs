//! The size of a value's JSON text, for bounds that speak in bytes of the wire (the server's
//! run records, the Host's answers from a server).

/// The size of `v`'s compact JSON text, counted without building it.
///
/// ```
/// use pilotage_runtime::model::size::json_size;
/// assert_eq!(json_size(&serde_json::json!({"a": [1, "x"]})), r#"{"a":[1,"x"]}"#.len());
/// ```
pub fn json_size<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Writing into a counter cannot fail but for a type whose Serialize fails, which counts
    // what was written before it.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}
