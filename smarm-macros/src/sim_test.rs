//! `#[smarm::sim::test]`: a test function run under deterministic
//! simulation over a range of seeds (`smarm::sim::Sim::test`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{Expr, ItemFn, MetaNameValue, Token};

/// The settings the attribute takes besides `seeds`: each is the `Sim`
/// builder method of that name.
const SETTINGS: [&str; 6] = [
    "schedulers",
    "strategy",
    "preempt_one_in",
    "step_time",
    "timer_lateness",
    "max_steps",
];

/// Expand `#[sim_test(args)] fn name() { body }`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = syn::parse::Parser::parse2(
        Punctuated::<MetaNameValue, Token![,]>::parse_terminated,
        args,
    )?;
    let f: ItemFn = syn::parse2(item)?;
    if !f.sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &f.sig.inputs,
            "#[smarm::sim::test] runs a function without arguments",
        ));
    }
    if let syn::ReturnType::Type(_, ty) = &f.sig.output {
        return Err(syn::Error::new_spanned(
            ty,
            "#[smarm::sim::test] runs a function that returns (): assert inside it",
        ));
    }
    let mut seeds: Option<Expr> = None;
    let mut settings = Vec::new();
    for arg in args {
        let Some(name) = arg.path.get_ident().map(ToString::to_string) else {
            return Err(syn::Error::new_spanned(
                &arg.path,
                "expected a setting name",
            ));
        };
        let value = arg.value;
        if name == "seeds" {
            seeds = Some(value);
        } else if name == "swarm" {
            match &value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Bool(b),
                    ..
                }) => {
                    if b.value {
                        settings.push(quote! { .swarm() });
                    }
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "`swarm` takes `true` or `false`",
                    ));
                }
            }
        } else if SETTINGS.contains(&name.as_str()) {
            let method = format_ident!("{}", name);
            settings.push(quote! { .#method(#value) });
        } else {
            return Err(syn::Error::new_spanned(
                &arg.path,
                format!(
                    "unknown setting `{name}`: #[smarm::sim::test] takes seeds, swarm and {}",
                    SETTINGS.join(", ")
                ),
            ));
        }
    }
    let seeds = seeds.unwrap_or_else(|| syn::parse_quote!(100));
    let (attrs, vis, name, body) = (&f.attrs, &f.vis, &f.sig.ident, &f.block);
    Ok(quote! {
        #[test]
        #(#attrs)*
        #vis fn #name() {
            ::smarm::sim::Sim::new(0)
                #(#settings)*
                .test(0..(#seeds) as u64, || #body);
        }
    })
}
