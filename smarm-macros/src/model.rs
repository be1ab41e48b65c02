//! What `#[derive(Actor)]` reads from the enum: its `#[actor(...)]`
//! options and, per variant, the payload fields and the reply slot. Every
//! misuse becomes a `syn::Error` on the offending span.

use proc_macro2::Span;
use syn::{Data, DeriveInput, Fields, GenericArgument, Ident, LitStr, PathArguments, Type};

/// The enum, ready to expand.
pub(crate) struct ActorEnum {
    pub(crate) ident: Ident,
    pub(crate) vis: syn::Visibility,
    pub(crate) name: Option<LitStr>,
    pub(crate) variants: Vec<Variant>,
}

/// One message.
pub(crate) struct Variant {
    pub(crate) ident: Ident,
    /// Tuple, named or unit.
    pub(crate) shape: Shape,
    /// The payload fields (the reply slot excluded), with the names the
    /// client method takes them by.
    pub(crate) args: Vec<(Ident, Type)>,
    /// The reply slot's value type, for a call.
    pub(crate) reply: Option<Type>,
    /// The reply slot's field name (named variants) or the binding used
    /// for it (tuple variants).
    pub(crate) reply_field: Ident,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Unit,
    Tuple,
    Named,
}

pub(crate) fn read(input: DeriveInput) -> syn::Result<ActorEnum> {
    let data = match input.data {
        Data::Enum(data) => data,
        Data::Struct(s) => {
            return Err(syn::Error::new(
                s.struct_token.span,
                "#[derive(Actor)] goes on a message enum (one variant per message), not a struct",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "#[derive(Actor)] goes on a message enum (one variant per message), not a union",
            ));
        }
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(Actor)] does not support generic message enums: give the actor a concrete message type",
        ));
    }
    let name = read_attrs(&input.attrs)?;
    let variants = data
        .variants
        .into_iter()
        .map(read_variant)
        .collect::<syn::Result<_>>()?;
    Ok(ActorEnum {
        ident: input.ident,
        vis: input.vis,
        name,
        variants,
    })
}

/// `#[actor(name = "...")]`: the only option.
fn read_attrs(attrs: &[syn::Attribute]) -> syn::Result<Option<LitStr>> {
    let mut name = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("actor")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                let lit: LitStr = meta.value()?.parse()?;
                check_name(&lit)?;
                if name.replace(lit).is_some() {
                    return Err(meta.error("the actor's name is given twice"));
                }
                Ok(())
            } else {
                Err(meta.error("unknown #[actor(...)] option: the only one is `name = \"...\"`"))
            }
        })?;
    }
    Ok(name)
}

/// A registry name: non-empty, at most 255 bytes, no whitespace or
/// control characters.
fn check_name(lit: &LitStr) -> syn::Result<()> {
    let name = lit.value();
    let bad = if name.is_empty() {
        Some("an actor name cannot be empty")
    } else if name.len() > 255 {
        Some("an actor name is at most 255 bytes")
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("an actor name cannot contain whitespace or control characters")
    } else {
        None
    };
    match bad {
        Some(msg) => Err(syn::Error::new(lit.span(), msg)),
        None => Ok(()),
    }
}

fn read_variant(v: syn::Variant) -> syn::Result<Variant> {
    let (shape, fields): (Shape, Vec<syn::Field>) = match v.fields {
        Fields::Unit => (Shape::Unit, Vec::new()),
        Fields::Unnamed(f) => (Shape::Tuple, f.unnamed.into_iter().collect()),
        Fields::Named(f) => (Shape::Named, f.named.into_iter().collect()),
    };
    let replies: Vec<usize> = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| reply_type(&f.ty).is_some())
        .map(|(i, _)| i)
        .collect();
    if let Some(&second) = replies.get(1) {
        return Err(syn::Error::new_spanned(
            &fields[second].ty,
            "a message can carry one reply slot (`Reply<T>`); this is a second one",
        ));
    }
    if let Some(&at) = replies.first()
        && at + 1 != fields.len()
    {
        return Err(syn::Error::new_spanned(
            &fields[at].ty,
            "the reply slot (`Reply<T>`) must be the message's last field",
        ));
    }
    let mut args = Vec::new();
    let mut reply = None;
    let mut reply_field = Ident::new("reply", Span::call_site());
    for (i, field) in fields.into_iter().enumerate() {
        if let Some(value) = reply_type(&field.ty) {
            reply = Some(value);
            if let Some(name) = &field.ident {
                reply_field = name.clone();
            }
            continue;
        }
        let name = field
            .ident
            .clone()
            .unwrap_or_else(|| Ident::new(&format!("arg{i}"), Span::call_site()));
        args.push((name, field.ty));
    }
    Ok(Variant {
        ident: v.ident,
        shape,
        args,
        reply,
        reply_field,
    })
}

/// `T` if `ty` is `Reply<T>` (any path ending in `Reply` with one type
/// argument).
fn reply_type(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Reply" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first() {
        Some(GenericArgument::Type(t)) if args.args.len() == 1 => Some(t.clone()),
        _ => None,
    }
}

/// `SomeName` → `some_name`.
pub(crate) fn snake_case(ident: &Ident) -> String {
    let mut out = String::new();
    for (i, c) in ident.to_string().chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
