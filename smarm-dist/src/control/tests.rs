use super::*;
use crate::term::{FixInteger, List, atom, tuple};

fn a() -> Pid {
    Pid::new("a@localhost", 5, 0, 9)
}

fn b() -> Pid {
    Pid::new("b@localhost", 7, 1, 3)
}

fn n(v: i32) -> Term {
    Term::from(FixInteger::from(v))
}

fn list(elements: Vec<Term>) -> Term {
    Term::from(List::from(elements))
}

/// One message of every plain form, with the term that follows it.
fn samples() -> Vec<(Control, Option<Term>)> {
    let msg = Some(atom("hello"));
    vec![
        (
            Control::Send {
                from: None,
                to: a(),
            },
            msg.clone(),
        ),
        (
            Control::Send {
                from: Some(b()),
                to: a(),
            },
            msg.clone(),
        ),
        (
            Control::RegSend {
                from: a(),
                name: "counter".into(),
            },
            msg.clone(),
        ),
        (
            Control::AliasSend {
                from: b(),
                alias: atom("alias"),
            },
            msg.clone(),
        ),
        (Control::Link { from: a(), to: b() }, None),
        (
            Control::Exit {
                from: a(),
                to: b(),
                reason: atom("boom"),
                exit2: false,
            },
            None,
        ),
        (
            Control::Exit {
                from: a(),
                to: b(),
                reason: atom("boom"),
                exit2: true,
            },
            None,
        ),
        (
            Control::Unlink {
                id: n(3),
                from: b(),
                to: a(),
                ack: false,
            },
            None,
        ),
        (
            Control::Unlink {
                id: n(3),
                from: b(),
                to: a(),
                ack: true,
            },
            None,
        ),
        (Control::UnlinkLegacy { from: b(), to: a() }, None),
        (Control::NodeLink, None),
        (Control::GroupLeader { from: b(), to: a() }, None),
        (
            Control::MonitorP {
                from: a(),
                to: atom("counter"),
                reference: atom("r"),
            },
            None,
        ),
        (
            Control::DemonitorP {
                from: a(),
                to: b().to_term(),
                reference: atom("r"),
            },
            None,
        ),
        (
            Control::MonitorPExit {
                from: b().to_term(),
                to: a(),
                reference: atom("r"),
                reason: atom("noconnection"),
            },
            None,
        ),
        (
            Control::SpawnRequest {
                id: atom("req"),
                from: b(),
                group_leader: b().to_term(),
                module: "erpc".into(),
                function: "execute_call".into(),
                arity: 4,
                options: vec![atom("monitor"), tuple(vec![atom("reply"), atom("yes")])],
            },
            Some(list(vec![n(1), n(2)])),
        ),
        (
            Control::SpawnReply {
                id: atom("req"),
                to: b(),
                flags: SPAWN_REPLY_MONITORED,
                result: a().to_term(),
            },
            None,
        ),
    ]
}

#[test]
fn every_form_round_trips_plain_and_traced() {
    let token = tuple(vec![n(0), atom("label"), n(0), b().to_term(), n(0)]);
    for (c, payload) in samples() {
        let back = Control::read(&c.to_term(), payload.clone());
        assert_eq!(back, Ok((c.clone(), payload.clone())), "{c:?}");
        let with_token = Control::Traced {
            control: Box::new(c.clone()),
            token: token.clone(),
        };
        let (back, back_payload) = Control::read(&with_token.to_term(), payload.clone()).unwrap();
        assert_eq!(back_payload, payload);
        let has_tt = matches!(
            c,
            Control::Send { .. }
                | Control::RegSend { .. }
                | Control::AliasSend { .. }
                | Control::Exit { .. }
                | Control::SpawnRequest { .. }
                | Control::SpawnReply { .. }
        );
        if has_tt {
            assert_eq!(back, with_token, "{c:?}");
            assert_eq!(back.untraced(), (c, Some(token.clone())));
        } else {
            assert_eq!(back, c, "{c:?} has no traced form and is written plain");
        }
    }
}

#[test]
fn every_code_the_protocol_defines_is_known_and_no_other() {
    let defined = [
        1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
        32, 33, 34, 35, 36,
    ];
    let token = atom("token");
    let mut codes = std::collections::BTreeSet::new();
    for (c, payload) in samples() {
        for form in [
            c.clone(),
            Control::Traced {
                control: Box::new(c.clone()),
                token: token.clone(),
            },
        ] {
            let Term::Tuple(t) = form.to_term() else {
                unreachable!()
            };
            let Term::FixInteger(FixInteger { value }) = t.elements[0] else {
                unreachable!()
            };
            let (read, _) = Control::read(&form.to_term(), payload.clone()).unwrap();
            assert!(!matches!(read, Control::Unknown(_)));
            codes.insert(value);
        }
    }
    // The PAYLOAD_ forms, which this node reads but does not write.
    for (code, elements) in [
        (PAYLOAD_EXIT, vec![a().to_term(), b().to_term()]),
        (
            PAYLOAD_EXIT_TT,
            vec![a().to_term(), b().to_term(), token.clone()],
        ),
        (PAYLOAD_EXIT2, vec![a().to_term(), b().to_term()]),
        (
            PAYLOAD_EXIT2_TT,
            vec![a().to_term(), b().to_term(), token.clone()],
        ),
        (
            PAYLOAD_MONITOR_P_EXIT,
            vec![a().to_term(), b().to_term(), atom("r")],
        ),
    ] {
        let mut t = vec![n(code)];
        t.extend(elements);
        let (read, rest) = Control::read(&tuple(t), Some(atom("why"))).unwrap();
        assert_eq!(rest, None, "the reason is moved into the control");
        let (plain, _) = read.untraced();
        match plain {
            Control::Exit { reason, exit2, .. } => {
                assert_eq!(reason, atom("why"));
                assert_eq!(exit2, matches!(code, PAYLOAD_EXIT2 | PAYLOAD_EXIT2_TT));
            }
            Control::MonitorPExit { reason, .. } => assert_eq!(reason, atom("why")),
            other => panic!("{code} read as {other:?}"),
        }
        codes.insert(code);
    }
    assert_eq!(codes.into_iter().collect::<Vec<_>>(), defined);
    for code in [0, 9, 10, 11, 14, 15, 17, 37, 99, -1] {
        assert_eq!(
            Control::read(&tuple(vec![n(code), atom("x")]), Some(atom("m"))),
            Ok((Control::Unknown(code), Some(atom("m"))))
        );
    }
}

#[test]
fn a_malformed_control_says_what_is_wrong() {
    let send = tuple(vec![n(SEND), atom(""), a().to_term()]);
    assert_eq!(
        Control::read(&send, None),
        Err(ControlError::MissingPayload(SEND))
    );
    let link = tuple(vec![n(LINK), a().to_term(), b().to_term()]);
    assert_eq!(
        Control::read(&link, Some(atom("m"))),
        Err(ControlError::UnexpectedPayload(LINK))
    );
    let bad = tuple(vec![n(LINK), atom("not_a_pid"), b().to_term()]);
    assert!(matches!(
        Control::read(&bad, None),
        Err(ControlError::Shape { code: LINK, .. })
    ));
    let short = tuple(vec![n(SPAWN_REQUEST), atom("req")]);
    assert!(matches!(
        Control::read(&short, Some(list(vec![]))),
        Err(ControlError::Shape {
            code: SPAWN_REQUEST,
            ..
        })
    ));
    assert!(matches!(
        Control::read(&atom("nope"), None),
        Err(ControlError::NotControl(_))
    ));
    assert!(
        Control::read(&tuple(vec![atom("x")]), None)
            .unwrap_err()
            .to_string()
            .contains("not a tuple with an operation code")
    );
}
