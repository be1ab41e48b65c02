//! `Queue<T>`: a channel's FIFO, with the oldest message stored inline.
//!
//! Most channels hold zero or one message at a time (a reply, a token, a
//! request to an idle server). Keeping the oldest message in the channel
//! itself means those handoffs never touch the deque's separate buffer:
//! one cache line fewer per message. Invariant: `head` is `None` only when
//! `rest` is empty, and `head` is older than everything in `rest`.

use std::collections::VecDeque;

pub(crate) struct Queue<T> {
    head: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            head: None,
            rest: VecDeque::new(),
        }
    }
}

impl<T> Queue<T> {
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        if self.head.is_none() {
            self.head = Some(value);
        } else {
            self.rest.push_back(value);
        }
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        let value = self.head.take()?;
        self.head = self.rest.pop_front();
        Some(value)
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    pub(crate) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    /// Remove and return the oldest message matching `pred`, keeping the
    /// order of the others.
    pub(crate) fn take_first(&mut self, pred: impl Fn(&T) -> bool) -> Option<T> {
        if self.head.as_ref().is_some_and(&pred) {
            return self.pop();
        }
        let i = self.rest.iter().position(pred)?;
        self.rest.remove(i)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Queue;

    #[test]
    fn fifo_through_head_and_rest() {
        let mut m = Queue::default();
        for i in 0..5 {
            m.push(i);
        }
        assert_eq!(m.len(), 5);
        assert_eq!(m.take_first(|v| *v == 3), Some(3));
        assert_eq!(m.take_first(|v| *v == 0), Some(0), "a match in the head");
        let rest: Vec<_> = std::iter::from_fn(|| m.pop()).collect();
        assert_eq!(rest, [1, 2, 4]);
        assert!(m.is_empty());
        m.push(9);
        assert_eq!(m.pop(), Some(9));
        assert_eq!(m.pop(), None);
    }
}
