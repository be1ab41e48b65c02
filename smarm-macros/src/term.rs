//! `#[derive(Term)]`: `ToTerm` and `FromTerm` (smarm's distribution
//! crate) for a struct or enum, by the mapping that crate's
//! `term::convert` module documents: named structs as maps with atom keys
//! (or records, or tuples), tuple structs as tuples, newtypes
//! transparent, unit structs as atoms, enums as atoms and tagged tuples.
//! Misuse is a `syn::Error` on the offending span.

use crate::model::snake_case;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Path};

/// How a struct is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The default: by its shape.
    Natural,
    /// `{tag, fields...}`.
    Record,
    /// `{fields...}`.
    Tuple,
}

/// The `#[term(...)]` options of one item.
#[derive(Default)]
struct Options {
    krate: Option<Path>,
    rename: Option<LitStr>,
    record: Option<Span>,
    tuple: Option<Span>,
}

fn read_options(attrs: &[syn::Attribute], allow: &[&str]) -> syn::Result<Options> {
    let mut o = Options::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("term")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            if !allow.contains(&key.as_str()) {
                return Err(meta.error(format!(
                    "unknown #[term] option here; expected one of: {}",
                    allow.join(", ")
                )));
            }
            match key.as_str() {
                "crate" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    o.krate = Some(lit.parse()?);
                }
                "rename" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    if lit.value().is_empty() || lit.value().len() > 255 {
                        return Err(syn::Error::new(
                            lit.span(),
                            "an atom has 1 to 255 characters",
                        ));
                    }
                    o.rename = Some(lit);
                }
                "record" => {
                    o.record = Some(meta.path.get_ident().map_or(Span::call_site(), Ident::span))
                }
                "tuple" => {
                    o.tuple = Some(meta.path.get_ident().map_or(Span::call_site(), Ident::span))
                }
                _ => unreachable!("checked against `allow`"),
            }
            Ok(())
        })?;
    }
    if let (Some(_), Some(span)) = (o.record, o.tuple) {
        return Err(syn::Error::new(
            span,
            "#[term(record)] and #[term(tuple)] exclude each other: choose one",
        ));
    }
    Ok(o)
}

/// A field: how the expansion names it and how the term does.
struct Field {
    /// `self.<member>`.
    member: syn::Member,
    /// The binding in a pattern.
    binding: Ident,
    /// The map key (named fields).
    key: String,
    /// For error messages.
    label: String,
    /// The field's type, where a missing trait impl is reported.
    span: Span,
}

fn read_fields(fields: &Fields) -> syn::Result<Vec<Field>> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let o = read_options(&f.attrs, &["rename"])?;
            Ok(match &f.ident {
                Some(ident) => Field {
                    member: syn::Member::Named(ident.clone()),
                    binding: format_ident!("__f_{}", ident),
                    key: o.rename.map_or_else(|| ident.to_string(), |l| l.value()),
                    label: ident.to_string(),
                    span: f.ty.span(),
                },
                None => {
                    if let Some(lit) = o.rename {
                        return Err(syn::Error::new(
                            lit.span(),
                            "#[term(rename)] names a map key: a tuple field has none",
                        ));
                    }
                    Field {
                        member: syn::Member::Unnamed(syn::Index::from(i)),
                        binding: format_ident!("__f{}", i),
                        key: i.to_string(),
                        label: i.to_string(),
                        span: f.ty.span(),
                    }
                }
            })
        })
        .collect()
}

pub(crate) fn derive(input: DeriveInput) -> syn::Result<TokenStream> {
    let options = match &input.data {
        Data::Struct(_) => read_options(&input.attrs, &["crate", "rename", "record", "tuple"])?,
        Data::Enum(_) => read_options(&input.attrs, &["crate"])?,
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "#[derive(Term)] goes on a struct or an enum, not a union",
            ));
        }
    };
    let krate = options
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::smarm::dist));
    let conv = quote!(#krate::term::convert);
    let d = quote!(#krate::term::__derive);
    let ident = &input.ident;
    let ty_name = ident.to_string();

    let (to_body, from_body) = match &input.data {
        Data::Struct(s) => {
            let fields = read_fields(&s.fields)?;
            let form = match (options.record, options.tuple) {
                (Some(_), _) => Form::Record,
                (_, Some(_)) => Form::Tuple,
                _ => Form::Natural,
            };
            let tag = options
                .rename
                .as_ref()
                .map_or_else(|| snake_case(ident), LitStr::value);
            struct_bodies(&d, &ty_name, &tag, &s.fields, &fields, form)?
        }
        Data::Enum(e) => enum_bodies(&d, &ty_name, e)?,
        Data::Union(_) => unreachable!("refused above"),
    };

    let mut to_generics = input.generics.clone();
    let mut from_generics = input.generics.clone();
    for p in to_generics.type_params_mut() {
        p.bounds.push(syn::parse_quote!(#conv::ToTerm));
    }
    for p in from_generics.type_params_mut() {
        p.bounds.push(syn::parse_quote!(#conv::FromTerm));
    }
    let (to_impl, _, to_where) = to_generics.split_for_impl();
    let (from_impl, _, from_where) = from_generics.split_for_impl();
    let (_, ty_generics, _) = input.generics.split_for_impl();
    Ok(quote! {
        #[automatically_derived]
        impl #to_impl #conv::ToTerm for #ident #ty_generics #to_where {
            fn to_term(&self) -> #krate::term::Term {
                #to_body
            }
        }

        #[automatically_derived]
        impl #from_impl #conv::FromTerm for #ident #ty_generics #from_where {
            fn from_term(
                __term: &#krate::term::Term,
            ) -> ::core::result::Result<Self, #conv::FromTermError> {
                #from_body
            }
        }
    })
}

/// An enum's `to_term` and `from_term` bodies: a variant is its tag atom,
/// or a tuple of its tag and fields.
fn enum_bodies(
    d: &TokenStream,
    ty_name: &str,
    e: &syn::DataEnum,
) -> syn::Result<(TokenStream, TokenStream)> {
    let mut to_arms = Vec::new();
    let mut from_arms = Vec::new();
    for v in &e.variants {
        let vo = read_options(&v.attrs, &["rename"])?;
        let vident = &v.ident;
        let tag = vo.rename.map_or_else(|| snake_case(vident), |l| l.value());
        let fields = read_fields(&v.fields)?;
        let bindings: Vec<_> = fields.iter().map(|f| &f.binding).collect();
        let members: Vec<_> = fields.iter().map(|f| &f.member).collect();
        let label = format!("{ty_name}::{vident}");
        let n = fields.len();
        match &v.fields {
            Fields::Unit => {
                to_arms.push(quote!(Self::#vident => #d::atom(#tag)));
                from_arms.push(quote!((#tag, None) => Ok(Self::#vident)));
            }
            _ => {
                let idx: Vec<_> = (0..n).collect();
                let to: Vec<_> = fields
                    .iter()
                    .map(|f| {
                        let b = &f.binding;
                        quote_spanned!(f.span=> #d::to(#b))
                    })
                    .collect();
                let from: Vec<_> = fields
                    .iter()
                    .zip(&idx)
                    .map(|(f, i)| {
                        let l = &f.label;
                        quote_spanned!(f.span=> #d::field(&__fs[#i], #label, #l)?)
                    })
                    .collect();
                to_arms.push(quote!(
                    Self::#vident { #(#members: #bindings),* } =>
                        #d::tuple(Some(#tag), vec![#(#to),*])
                ));
                from_arms.push(quote!(
                    (#tag, Some(__fs)) if __fs.len() == #n => Ok(Self::#vident {
                        #(#members: #from),*
                    })
                ));
            }
        }
    }
    let to = quote!(match self { #(#to_arms,)* });
    let from = quote!(
        match #d::variant(__term, #ty_name)? {
            #(#from_arms,)*
            _ => Err(#d::unknown(__term, #ty_name)),
        }
    );
    Ok((to, from))
}

/// A struct's `to_term` and `from_term` bodies.
fn struct_bodies(
    d: &TokenStream,
    ty_name: &str,
    tag: &str,
    shape: &Fields,
    fields: &[Field],
    form: Form,
) -> syn::Result<(TokenStream, TokenStream)> {
    let members: Vec<_> = fields.iter().map(|f| &f.member).collect();
    let n = fields.len();
    // Each field's conversions, spanned on its type: a type without the
    // trait is reported there.
    let to: Vec<_> = fields
        .iter()
        .map(|f| {
            let m = &f.member;
            quote_spanned!(f.span=> #d::to(&self.#m))
        })
        .collect();
    let from_positional: Vec<_> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let l = &f.label;
            quote_spanned!(f.span=> #d::field(&__fs[#i], #ty_name, #l)?)
        })
        .collect();
    let positional = |tag: Option<&str>| {
        let tag_tokens = match tag {
            Some(t) => quote!(Some(#t)),
            None => quote!(None),
        };
        let to = quote!(#d::tuple(#tag_tokens, vec![#(#to),*]));
        let from = quote!({
            let __fs = #d::fields(__term, #ty_name, #tag_tokens, #n)?;
            Ok(Self { #(#members: #from_positional),* })
        });
        (to, from)
    };
    Ok(match (shape, form) {
        (Fields::Unit, Form::Tuple) => {
            return Err(syn::Error::new(
                Span::call_site(),
                "#[term(tuple)] on a unit struct would be the empty tuple: leave it an atom, or use #[term(record)]",
            ));
        }
        (Fields::Unit, _) => (
            quote!(#d::atom(#tag)),
            quote!(#d::unit(__term, #ty_name, #tag).map(|()| Self)),
        ),
        (_, Form::Record) => positional(Some(tag)),
        (_, Form::Tuple) => positional(None),
        (Fields::Unnamed(_), Form::Natural) if n == 1 => {
            let span = fields[0].span;
            (
                quote_spanned!(span=> #d::to(&self.0)),
                quote_spanned!(span=> Ok(Self(#d::field(__term, #ty_name, "0")?))),
            )
        }
        (Fields::Unnamed(_), Form::Natural) => positional(None),
        (Fields::Named(_), Form::Natural) => {
            let keys: Vec<_> = fields.iter().map(|f| f.key.clone()).collect();
            let from: Vec<_> = fields
                .iter()
                .map(|f| {
                    let (k, l) = (&f.key, &f.label);
                    quote_spanned!(f.span=> #d::key(__map, #ty_name, #k, #l)?)
                })
                .collect();
            (
                quote!(#d::map(vec![#((#keys, #to)),*])),
                quote!({
                    let __map = #d::as_map(__term, #ty_name)?;
                    Ok(Self { #(#members: #from),* })
                }),
            )
        }
    })
}
