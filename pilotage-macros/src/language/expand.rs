//! Code generation: the user's impl (tool attributes stripped) and `impl Engine` for its type.
//! Every runtime item is reached through `::pilotage::__private`.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItem, ItemImpl};

use super::check::{ContextSchema, LoopTool, Model, PlainTool, Retention};
use super::shapes::PlainParam;
use crate::guides::CLOSED_SETS;

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn string(s: &str) -> Literal {
    Literal::string(s)
}

/// The impl with `#[allow(dead_code)]` on methods the runtime never calls.
fn user_impl(item: &ItemImpl, unused: &[usize]) -> ItemImpl {
    let mut item = item.clone();
    for index in unused {
        if let Some(ImplItem::Fn(f)) = item.items.get_mut(*index) {
            f.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
        }
    }
    item
}

/// The full expansion of a checked Language.
pub fn expand(item: &ItemImpl, model: &Model) -> TokenStream {
    let p = quote!(::pilotage::__private);
    let self_ty = &item.self_ty;
    let (impl_generics, _, where_clause) = item.generics.split_for_impl();
    let user = user_impl(item, &model.unused_methods);

    let name = string(&model.name);
    let title = string(&model.title);
    let program = string(&model.program);
    let locator = ident(model.locator);
    let caps = model.capabilities.iter().map(|c| ident(c));
    let subs = model.sub_features.iter().map(|s| ident(s));
    let option = |v: Option<&'static str>, ty: &str| match v {
        Some(v) => {
            let (ty, v) = (ident(ty), ident(v));
            quote!(::core::option::Option::Some(#p::#ty::#v))
        }
        None => quote!(::core::option::Option::None),
    };
    let execution = option(model.execution, "ExecutionMode");
    let trace = option(model.trace, "TraceLevel");
    let trace_subprogram = option(model.trace_subprogram, "TraceSubprogram");
    let tasks = model.tasks;
    let promotion_authority = option(model.promotion_authority, "PromotionAuthority");
    let retention = match &model.retention {
        None => quote!(::core::option::Option::None),
        Some(Retention::None) => quote!(::core::option::Option::Some(#p::Retention::None)),
        Some(Retention::Session) => quote!(::core::option::Option::Some(#p::Retention::Session)),
        Some(Retention::Duration { iso, secs, nanos }) => {
            let iso = string(iso);
            let secs = Literal::u64_suffixed(*secs);
            let nanos = Literal::u32_suffixed(*nanos);
            quote!(::core::option::Option::Some(#p::Retention::Duration {
                iso: #iso,
                length: #p::Duration::new(#secs, #nanos),
            }))
        }
    };

    let mut tracked = Vec::new();
    let context_schema = match &model.context_schema {
        Some(ContextSchema::File(path, text)) => {
            tracked.push(string(&path.to_string_lossy()));
            let text = string(text);
            quote!(::core::option::Option::Some(
                #p::serde_json::from_str::<#p::serde_json::Value>(#text).unwrap_or_default()
            ))
        }
        Some(ContextSchema::Type(ty)) => {
            let schema = quote_spanned!(ty.span()=> ::pilotage::__private::plain::input_schema::<#ty>());
            quote!(::core::option::Option::Some(#schema))
        }
        None => quote!(::core::option::Option::None),
    };

    let guides = model.guides.iter().map(|g| {
        tracked.push(string(&g.path.to_string_lossy()));
        let id = string(&g.id);
        let title = string(&g.title);
        let level = ident(match g.level {
            "core" => "Core",
            "reference" => "Reference",
            _ => "Examples",
        });
        let topics = g.topics.iter().map(|t| string(t));
        let body = string(&g.body);
        quote!(#p::GuideSource {
            id: #id,
            title: #title,
            level: #p::GuideLevel::#level,
            topics: &[#(#topics),*],
            body: #body,
        })
    });
    let guides: Vec<TokenStream> = guides.collect();

    let decl = |t: &LoopTool| {
        let name = string(&t.name);
        let doc = string(&t.doc);
        let inline = t.inline;
        quote!(#p::ToolDecl { name: #name, doc: #doc, inline: #inline })
    };
    let validate_decl = decl(&model.validate);
    let some_decl = |t: &Option<LoopTool>| match t {
        Some(t) => {
            let d = decl(t);
            quote!(::core::option::Option::Some(#d))
        }
        None => quote!(::core::option::Option::None),
    };
    let execute_decl = some_decl(&model.execute);
    let trace_decl = some_decl(&model.trace_tool);

    let codes = &model.codes;
    let risk = &model.risk;
    let statuses = match &model.statuses {
        Some(s) => quote!(#s),
        None => quote!(#p::NoStatus),
    };
    let kinds = match &model.kinds {
        Some(k) => quote!(#k),
        None => quote!(#p::NoKind),
    };

    let plain_specs = model.plain_tools.iter().map(plain_spec);
    let plain_arms = model.plain_tools.iter().map(|t| plain_arm(self_ty, t));

    let catalog = match &model.catalog {
        Some((method, ret)) => {
            let snapshot = quote_spanned!(ret.span()=> ::pilotage::__private::catalog_snapshot(snapshot));
            quote!({
                let snapshot = <#self_ty>::#method(self, caller);
                ::core::option::Option::Some(#snapshot)
            })
        }
        None => quote!({
            let _ = caller;
            ::core::option::Option::None
        }),
    };

    let narrate = model.narrate.as_ref().map(|method| {
        quote! {
            fn narrate(
                &self,
                run: &#p::TraceFetchResponse,
                question: ::core::option::Option<&str>,
            ) -> ::core::option::Option<::std::string::String> {
                <#self_ty>::#method(self, run, question)
            }
        }
    });

    let validate_call = match &model.validate.method {
        Some((method, shape)) => {
            let program = quote_spanned!(shape.program.span()=> &*request.program);
            let sink = quote_spanned!(shape.sink.span()=> &mut validation);
            quote!(<#self_ty>::#method(self, #program, #sink))
        }
        None => quote!(()),
    };

    let execute = match &model.execute {
        Some(LoopTool { method: Some((method, shape)), is_async, no_input, .. }) => {
            let program = quote_spanned!(shape.program.span()=> &*request.program);
            let sink = quote_spanned!(shape.sink.span()=> &mut run);
            let ret = shape.ret.as_ref().map_or_else(|| method.span(), |r| r.span());
            let call = if *is_async {
                quote!(<#self_ty>::#method(self, #program, #sink).await)
            } else {
                quote!(<#self_ty>::#method(self, #program, #sink))
            };
            // The conversion is spanned at the user's return type (path included), so a
            // wrong type is reported there, once.
            let finish = quote_spanned!(ret=> ::pilotage::__private::Finish::<#statuses>::into_core(finish));
            let refuse_input = no_input.then(|| {
                let message =
                    string(&format!("{} programs take no input: run them without `input`", model.name));
                quote! {
                    if run.input().is_some() {
                        run.reject_input("", #message);
                        return #p::Finish::<#statuses>::done().into_core();
                    }
                }
            });
            // Spanned at the method's name: a future that is not `Send` is reported there.
            quote_spanned!(method.span()=> ::std::boxed::Box::pin(async move {
                let mut run = #p::Run::<#statuses>::new(request, recorder);
                #refuse_input
                let finish = #call;
                #finish
            }))
        }
        _ => quote!(::std::boxed::Box::pin(async move {
            let _ = (request, recorder);
            #p::Finish::<#p::NoStatus>::error("execute is not declared for this Language").into_core()
        })),
    };

    let guide_checks = guide_checks(model);

    quote! {
        #user

        #(const _: &str = ::core::include_str!(#tracked);)*

        #guide_checks

        #[automatically_derived]
        impl #impl_generics #p::Engine for #self_ty #where_clause {
            fn language_spec(&self) -> &'static #p::LanguageSpec {
                static SPEC: #p::OnceLock<#p::LanguageSpec> = #p::OnceLock::new();
                SPEC.get_or_init(|| #p::LanguageSpec {
                    name: #name,
                    title: #title,
                    program_argument: #program,
                    locator: #p::LocatorDialect::#locator,
                    capabilities: #p::CapabilityDeclaration::new()
                        #(.with(#p::Capability::#caps))*
                        #(.with_sub(#p::SubFeature::#subs))*,
                    execution: #execution,
                    trace: #trace,
                    retention: #retention,
                    trace_subprogram: #trace_subprogram,
                    promotion_authority: #promotion_authority,
                    tasks: #tasks,
                    context_schema: #context_schema,
                    tools: #p::LoopTools {
                        validate: #validate_decl,
                        execute: #execute_decl,
                        trace: #trace_decl,
                    },
                    guides: ::std::vec![#(#guides),*],
                    sets: #p::ClosedSets::of::<#codes, #risk, #statuses, #kinds>(),
                    plain_tools: ::std::vec![#(#plain_specs),*],
                    limits: #p::Limits::default(),
                })
            }

            fn catalog_snapshot(
                &self,
                caller: &#p::Caller,
            ) -> ::core::option::Option<#p::Arc<#p::CatalogSnapshot>> {
                #catalog
            }

            fn validate_program(&self, request: &#p::ValidateRequest) -> #p::ValidationCore {
                let mut validation = #p::Validation::<#codes, #risk>::new(request);
                #validate_call;
                validation.finish()
            }

            fn execute_program<'pilotage>(
                &'pilotage self,
                request: &'pilotage #p::ExecuteRequest,
                recorder: #p::Recorder,
            ) -> #p::BoxFuture<'pilotage, #p::FinishCore> {
                #execute
            }

            #narrate

            fn call_plain_tool(
                &self,
                name: &str,
                arguments: &#p::serde_json::Value,
                caller: &#p::Caller,
            ) -> ::core::option::Option<::core::result::Result<#p::serde_json::Value, #p::PlainToolError>> {
                let _ = (arguments, caller);
                match name {
                    #(#plain_arms)*
                    _ => ::core::option::Option::None,
                }
            }
        }
    }
}

/// A plain tool's `PlainToolSpec`: its input schema from its argument type, or as written (an
/// object schema by default); its output schema from a typed answer.
fn plain_spec(t: &PlainTool) -> TokenStream {
    let p = quote!(::pilotage::__private);
    let name = string(&t.name);
    let description = string(&t.description);
    let read_only = t.read_only;
    let typed =
        t.shape.params.iter().find_map(|a| if let PlainParam::Typed(ty) = a { Some(ty) } else { None });
    let input = match (typed, &t.input_schema) {
        (Some(ty), _) => quote_spanned!(ty.span()=> ::pilotage::__private::plain::input_schema::<#ty>()),
        (None, schema) => {
            let schema = string(schema.as_deref().unwrap_or("{\"type\":\"object\"}"));
            quote!(#p::serde_json::from_str::<#p::serde_json::Value>(#schema).unwrap_or_default())
        }
    };
    let output = match &t.shape.output {
        Some(ty) => {
            let schema = quote_spanned!(ty.span()=> ::pilotage::__private::plain::output_schema::<#ty>());
            quote!(::core::option::Option::Some(#schema))
        }
        None => quote!(::core::option::Option::None),
    };
    quote!(#p::PlainToolSpec {
        name: #name,
        description: #description,
        input_schema: #input,
        output_schema: #output,
        read_only: #read_only,
    })
}

/// A plain tool's arm in `call_plain_tool`: typed arguments are read first (a value that does
/// not fit is `InvalidArguments`), then the answer converted; both spanned at the user's types.
fn plain_arm(self_ty: &syn::Type, t: &PlainTool) -> TokenStream {
    let name = string(&t.name);
    let method = &t.method;
    let mut read = TokenStream::new();
    let args = t.shape.params.iter().map(|a| match a {
        PlainParam::Caller => quote!(caller),
        PlainParam::Json => quote!(arguments),
        PlainParam::Typed(ty) => {
            read = quote_spanned!(ty.span()=> ::pilotage::__private::plain::arguments::<#ty>(arguments));
            quote!(typed)
        }
    });
    let args: Vec<TokenStream> = args.collect();
    let answered = quote_spanned!(t.shape.ret.span()=> ::pilotage::__private::plain::answer(answer));
    let answer = quote!({
        let answer = <#self_ty>::#method(self, #(#args),*);
        #answered
    });
    let body = if read.is_empty() {
        answer
    } else {
        quote!(match #read {
            ::core::result::Result::Ok(typed) => #answer,
            ::core::result::Result::Err(e) => ::core::result::Result::Err(e),
        })
    };
    quote!(#name => ::core::option::Option::Some(#body),)
}

/// Part II §5.2: the closed-sets guide names every member of every closed set the declared
/// capabilities make reachable: diagnostic codes always, risk levels with `catalog` or `plan`,
/// statuses with `execute`, entry kinds with `catalog` (reserved members included). The macro
/// cannot see the enums' variants, so the check is a `const` per set, evaluated by the
/// compiler with the sets' `MEMBERS`; it fails the build at the `guides = "..."` value with a
/// message naming the guide file and every member it omits.
fn guide_checks(model: &Model) -> TokenStream {
    let Some(guide) = model.guides.iter().find(|g| g.topics.iter().any(|t| t == CLOSED_SETS)) else {
        return TokenStream::new();
    };
    let p = quote!(::pilotage::__private);
    let declares = |c: &str| model.capabilities.contains(&c);
    let codes = &model.codes;
    let mut sets = vec![quote!(#p::GuideSet::codes::<#codes>())];
    if declares("Catalog") || declares("Plan") {
        let risk = &model.risk;
        sets.push(quote!(#p::GuideSet::risk_levels::<#risk>()));
    }
    if declares("Execute") {
        let statuses = match &model.statuses {
            Some(s) => quote!(#s),
            None => quote!(#p::NoStatus),
        };
        sets.push(quote!(#p::GuideSet::statuses::<#statuses>()));
    }
    if let (true, Some(kinds)) = (declares("Catalog"), &model.kinds) {
        sets.push(quote!(#p::GuideSet::kinds::<#kinds>()));
    }
    let span = model.guides_lit.span();
    let checks = sets.iter().map(|set| {
        let fail = quote_spanned!(span=> ::core::panic!("{}", #p::GuideSet::text(&MESSAGE)));
        quote! {
            const _: () = {
                const SET: #p::GuideSet = #set;
                const LEN: usize = #p::GuideSet::message_len(SET, FILE, GUIDE);
                const MESSAGE: [u8; LEN] = #p::GuideSet::message::<LEN>(SET, FILE, GUIDE);
                if LEN != 0 {
                    #fail
                }
            };
        }
    });
    let file = string(&guide.file);
    let body = string(&guide.body);
    // A scan costs a few const-eval steps per byte of the guide; the lint would stop a very
    // large guide (hundreds of KiB) although the scan always ends.
    quote! {
        #[allow(long_running_const_eval)]
        const _: () = {
            const FILE: &str = #file;
            const GUIDE: &str = #body;
            #(#checks)*
        };
    }
}

/// What is emitted when the declaration has errors: the impl (attributes stripped, nothing
/// flagged as unused) and an `Engine` impl that is never reached, so code that uses the engine
/// does not add "trait not implemented" errors to ours.
pub fn fallback(item: &ItemImpl) -> TokenStream {
    let p = quote!(::pilotage::__private);
    let mut user = item.clone();
    user.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    if item.trait_.is_some() {
        return quote!(#user);
    }
    let self_ty = &item.self_ty;
    let (impl_generics, _, where_clause) = item.generics.split_for_impl();
    let unreachable = quote!(::core::unreachable!("#[pilotage::language] reported errors for this impl"));
    quote! {
        #user

        #[automatically_derived]
        impl #impl_generics #p::Engine for #self_ty #where_clause {
            fn language_spec(&self) -> &'static #p::LanguageSpec {
                #unreachable
            }
            fn catalog_snapshot(&self, _: &#p::Caller) -> ::core::option::Option<#p::Arc<#p::CatalogSnapshot>> {
                #unreachable
            }
            fn validate_program(&self, _: &#p::ValidateRequest) -> #p::ValidationCore {
                #unreachable
            }
            fn execute_program<'pilotage>(
                &'pilotage self,
                _: &'pilotage #p::ExecuteRequest,
                _: #p::Recorder,
            ) -> #p::BoxFuture<'pilotage, #p::FinishCore> {
                #unreachable
            }
            fn call_plain_tool(
                &self,
                _: &str,
                _: &#p::serde_json::Value,
                _: &#p::Caller,
            ) -> ::core::option::Option<::core::result::Result<#p::serde_json::Value, #p::PlainToolError>> {
                #unreachable
            }
        }
    }
}
