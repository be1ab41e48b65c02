//! The code `#[derive(Actor)]` emits (see the crate docs for an example of
//! the expansion).

use crate::model::{ActorEnum, Shape, Variant, snake_case};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

pub(crate) fn expand(e: &ActorEnum) -> TokenStream {
    let ident = &e.ident;
    let vis = &e.vis;
    let api = format_ident!("{}Api", ident);
    let name = match &e.name {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    };
    let methods = e.variants.iter().map(|v| method(ident, v));
    let variant_arms = e.variants.iter().map(|v| {
        let variant = &v.ident;
        let text = variant.to_string();
        let pattern = match v.shape {
            Shape::Unit => quote!(#ident::#variant),
            Shape::Tuple => quote!(#ident::#variant(..)),
            Shape::Named => quote!(#ident::#variant { .. }),
        };
        quote!(#pattern => #text,)
    });
    let call_arms = e.variants.iter().filter(|v| v.reply.is_some()).map(|v| {
        let variant = &v.ident;
        match v.shape {
            Shape::Unit => quote!(#ident::#variant => true,),
            Shape::Tuple => quote!(#ident::#variant(..) => true,),
            Shape::Named => quote!(#ident::#variant { .. } => true,),
        }
    });
    let constant = e.name.as_ref().map(|lit| {
        let konst = format_ident!("{}", snake_case(ident).to_uppercase());
        let doc = format!(
            "The registry name of [`{ident}`] actors: {:?}.",
            lit.value()
        );
        quote! {
            #[doc = #doc]
            #vis const #konst: ::smarm::Name<#ident> = ::smarm::Name::new(#lit);
        }
    });
    let api_doc = format!(
        "Client methods of [`{ident}`] actors, on their typed address \
         (`Pid<{ident}>`) and on a `Name<{ident}>`: one per message."
    );
    quote! {
        impl ::smarm::Addressable for #ident {
            type Msg = #ident;
        }

        impl ::smarm::actor::Actor for #ident {
            const NAME: ::core::option::Option<&'static str> = #name;

            fn variant(&self) -> &'static str {
                match self {
                    #(#variant_arms)*
                }
            }

            fn is_call(&self) -> bool {
                #[allow(unreachable_patterns)]
                match self {
                    #(#call_arms)*
                    _ => false,
                }
            }

            fn format_message(&self) -> ::std::string::String {
                // By `Debug` where the enum implements it, else by variant:
                // the `Debug` impl is on `&Show`, which method lookup tries
                // before the fallback on `Show` (autoref specialisation;
                // the type is concrete here, so the choice is made for it).
                struct Show<'a, T>(&'a T);
                trait ByDebug {
                    fn show(&self) -> ::std::string::String;
                }
                trait ByVariant {
                    fn show(&self) -> ::std::string::String;
                }
                impl<T: ::core::fmt::Debug> ByDebug for &Show<'_, T> {
                    fn show(&self) -> ::std::string::String {
                        ::std::format!("{:?}", self.0)
                    }
                }
                impl<T: ::smarm::actor::Actor> ByVariant for Show<'_, T> {
                    fn show(&self) -> ::std::string::String {
                        ::std::string::ToString::to_string(
                            ::smarm::actor::Actor::variant(self.0),
                        )
                    }
                }
                (&&Show(self)).show()
            }
        }

        #[doc = #api_doc]
        #vis trait #api: ::smarm::actor::Deliver<#ident> {
            #(#methods)*
        }

        impl<T: ::smarm::actor::Deliver<#ident>> #api for T {}

        #constant
    }
}

/// The client method(s) of one message: a cast, or a call and its
/// `_timeout` form.
fn method(enum_ident: &syn::Ident, v: &Variant) -> TokenStream {
    let variant = &v.ident;
    let method = format_ident!("{}", snake_case(variant));
    let params = v.args.iter().map(|(n, t)| quote!(#n: #t));
    let names: Vec<_> = v.args.iter().map(|(n, _)| n.clone()).collect();
    let build = |reply: Option<TokenStream>| -> TokenStream {
        let fields = names.iter().map(|n| quote!(#n));
        let all: Vec<TokenStream> = fields.chain(reply).collect();
        match v.shape {
            Shape::Unit => quote!(#enum_ident::#variant),
            Shape::Tuple => quote!(#enum_ident::#variant(#(#all),*)),
            Shape::Named => {
                // The reply slot goes by its own field name.
                quote!(#enum_ident::#variant { #(#all),* })
            }
        }
    };
    match &v.reply {
        None => {
            let msg = build(None);
            let doc = format!("Send [`{enum_ident}::{variant}`] (no reply).");
            quote! {
                #[doc = #doc]
                fn #method(&self, #(#params),*) -> ::core::result::Result<(), ::smarm::registry::SendError<#enum_ident>> {
                    self.deliver(#msg)
                }
            }
        }
        Some(reply_ty) => {
            let timeout = format_ident!("{}_timeout", method);
            let method_async = format_ident!("{}_async", method);
            let timeout_async = format_ident!("{}_timeout_async", method);
            let reply_field = v.reply_field.clone();
            let msg = build(Some(quote!(#reply_field)));
            let params2 = v.args.iter().map(|(n, t)| quote!(#n: #t));
            let params3 = v.args.iter().map(|(n, t)| quote!(#n: #t));
            let params4 = v.args.iter().map(|(n, t)| quote!(#n: #t));
            let doc_a = format!(
                "[`{method}`](Self::{method}) from async code: a `Send` future of the reply \
                 (5 s at most), on any executor."
            );
            let doc_ta = format!(
                "[`{timeout}`](Self::{timeout}) from async code, waiting at most `timeout`."
            );
            let doc =
                format!("Call [`{enum_ident}::{variant}`] and wait for the reply (5 s at most).");
            let doc_t = format!("Call [`{enum_ident}::{variant}`], waiting at most `timeout`.");
            // The call as the user wrote it, for the outside-an-actor panic.
            let what = format!("{enum_ident}Api::{method}");
            quote! {
                #[doc = #doc]
                fn #method(&self, #(#params),*) -> ::core::result::Result<#reply_ty, ::smarm::CallError> {
                    self.#timeout(#(#names,)* ::smarm::gen_server::DEFAULT_CALL_TIMEOUT)
                }

                #[doc = #doc_t]
                fn #timeout(&self, #(#params2,)* __timeout: ::std::time::Duration) -> ::core::result::Result<#reply_ty, ::smarm::CallError> {
                    ::smarm::gen_server::call_to(
                        #what,
                        || ::smarm::actor::Deliver::callee(self),
                        |#reply_field| #msg,
                        |__msg| self.deliver(__msg).map_err(::smarm::registry::SendError::into_inner),
                        __timeout,
                    )
                }

                #[doc = #doc_a]
                fn #method_async(&self, #(#params3),*) -> impl ::core::future::Future<Output = ::core::result::Result<#reply_ty, ::smarm::CallError>> + ::core::marker::Send + '_
                where
                    Self: ::core::marker::Sync,
                {
                    self.#timeout_async(#(#names,)* ::smarm::gen_server::DEFAULT_CALL_TIMEOUT)
                }

                #[doc = #doc_ta]
                fn #timeout_async(&self, #(#params4,)* __timeout: ::std::time::Duration) -> impl ::core::future::Future<Output = ::core::result::Result<#reply_ty, ::smarm::CallError>> + ::core::marker::Send + '_
                where
                    Self: ::core::marker::Sync,
                {
                    ::smarm::gen_server::call_async(
                        move |#reply_field| #msg,
                        move |__msg| async move {
                            self.deliver_async(__msg).await.map_err(::smarm::registry::SendError::into_inner)
                        },
                        __timeout,
                    )
                }
            }
        }
    }
}
