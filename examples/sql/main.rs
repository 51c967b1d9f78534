use sqlparser::dialect::SQLiteDialect;
use sqlparser::tokenizer::Tokenizer;
use sqlparser::parser::Parser;
use sqlparser::ast::Spanned;
fn main() {
    let d = SQLiteDialect {};
    for sql in ["SELECT name FROM userz WHERE id = :id;\n  DELETE FROM orders", "SELEC 1", "SELECT * FROM t WHERE", "SELECT 'abc", "SELECT a MATCH )"] {
        let toks = Tokenizer::new(&d, sql).tokenize_with_location();
        match toks {
            Ok(t) => { for x in &t { print!("[{:?} {:?}] ", x.token, x.span); } println!(); 
              let r = std::panic::catch_unwind(|| Parser::new(&d).try_with_sql(sql).and_then(|mut p| p.parse_statements()));
              match r { Ok(Ok(s)) => for st in s { println!("STMT {:?}", st.span()); }, Ok(Err(e)) => println!("ERR {e}"), Err(_) => println!("PANIC") }
            }
            Err(e) => println!("TOKERR {e} {:?}", e.location),
        }
    }
    let c = rusqlite::Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TABLE t(id INTEGER, name TEXT) STRICT; CREATE TABLE u(id INTEGER, x TEXT) STRICT;").unwrap();
    for sql in ["SELECT nam FROM t", "SELECT id FROM t JOIN u", "SELECT * FROM tt", "SELECT foo(1)", "INSERT INTO t(id,name) VALUES (1)", "SELECT load_extension('x')", "PRAGMA table_info(t)", "SELECT t.nme FROM t", "SELECT * FROM t WHERE", "VACUUM INTO '/tmp/x'"] {
        match c.prepare(sql) { Ok(_) => println!("OK {sql}"), Err(e) => println!("{sql} => {e:?}") }
    }
}
