//! Go's `sort.Slice`, step for step: the pattern-defeating quicksort of Go's `sort` package
//! (Go 1.19 and later), so that a list opm sorts with it comes out in opm's order even where
//! the sort is not stable (equal keys under different names).
//!
//! Rust's own unstable sort is another algorithm and would order equal elements differently;
//! a stable sort keeps the input order, which Go's sort does only up to 12 elements.

use std::cmp::Ordering;

/// Sorts `data` as Go's `sort.Slice(data, less)` does, where `less(a, b)` is
/// `cmp(a, b) == Less`.
pub fn sort_slice<T>(data: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    let n = data.len();
    let mut s = Sorter { data, cmp };
    s.pdqsort(0, n, bits_len(n));
}

/// `bits.Len(uint(n))`: the number of bits needed to represent `n`.
fn bits_len(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

struct Sorter<'a, T, F> {
    data: &'a mut [T],
    cmp: F,
}

impl<T, F: Fn(&T, &T) -> Ordering> Sorter<'_, T, F> {
    fn less(&self, i: usize, j: usize) -> bool {
        (self.cmp)(&self.data[i], &self.data[j]) == Ordering::Less
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.data.swap(i, j);
    }

    fn insertion_sort(&mut self, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(&mut self, lo: usize, hi: usize, first: usize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                return;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: usize, b: usize) {
        let first = a;
        let hi = b - a;
        // Only called on more than 12 elements, so `hi - 1` does not wrap.
        for i in (0..=(hi - 1) / 2).rev() {
            self.sift_down(i, hi, first);
        }
        for i in (0..hi).rev() {
            self.swap(first, first + i);
            self.sift_down(0, i, first);
        }
    }

    fn pdqsort(&mut self, mut a: usize, mut b: usize, mut limit: usize) {
        const MAX_INSERTION: usize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == Hint::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == Hint::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already) = self.partition(a, b, pivot);
            was_partitioned = already;
            let (left, right) = (mid - a, b - mid);
            let threshold = length / 8;
            if left < right {
                was_balanced = left >= threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn partition(&mut self, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        self.swap(a, pivot);
        // Go's indices are signed; `j` never drops below `a` here, so usize is safe.
        let (mut i, mut j) = (a + 1, b - 1);
        while i <= j && self.less(i, a) {
            i += 1;
        }
        while i <= j && !self.less(j, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j, a);
            return (j, true);
        }
        self.swap(i, j);
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(i, a) {
                i += 1;
            }
            while i <= j && !self.less(j, a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        self.swap(j, a);
        (j, false)
    }

    fn partition_equal(&mut self, a: usize, b: usize, pivot: usize) -> usize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        loop {
            while i <= j && !self.less(a, i) {
                i += 1;
            }
            while i <= j && self.less(a, j) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        i
    }

    fn partial_insertion_sort(&mut self, a: usize, b: usize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: usize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            // Go shifts down to index 1 of the whole slice, not of data[a:b].
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            if b - i >= 2 {
                for j in i + 1..b {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: usize, b: usize) {
        let length = b - a;
        if length >= 8 {
            let mut random = length as u64;
            let modulus = 1usize << bits_len(length);
            let start = a + (length / 4) * 2 - 1;
            for idx in start..=start + 2 {
                // Go's xorshift (`sort.go`): <<13, >>7, <<17.
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                let mut other = (random as usize) & (modulus - 1);
                if other >= length {
                    other -= length;
                }
                self.swap(idx, a + other);
            }
        }
    }

    fn choose_pivot(&mut self, a: usize, b: usize) -> (usize, Hint) {
        const SHORTEST_NINTHER: usize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let l = b - a;
        let mut swaps = 0;
        let mut i = a + l / 4;
        let mut j = a + l / 4 * 2;
        let mut k = a + l / 4 * 3;
        if l >= 8 {
            if l >= SHORTEST_NINTHER {
                i = self.median(i - 1, i, i + 1, &mut swaps);
                j = self.median(j - 1, j, j + 1, &mut swaps);
                k = self.median(k - 1, k, k + 1, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        let hint = match swaps {
            0 => Hint::Increasing,
            MAX_SWAPS => Hint::Decreasing,
            _ => Hint::Unknown,
        };
        (j, hint)
    }

    fn order2(&self, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
        if self.less(b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn median(&self, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, c) = self.order2(b, c, swaps);
        let _ = c;
        let (_, b) = self.order2(a, b, swaps);
        b
    }

    fn reverse_range(&mut self, a: usize, b: usize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random keys with many duplicates.
    fn keys(n: usize, seed: u64, distinct: u64) -> Vec<(u64, usize)> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % distinct, i)
            })
            .collect()
    }

    #[test]
    fn sorts_every_shape() {
        for n in 0..400 {
            for (seed, distinct) in [(1, 3), (7, 50), (99, 1_000_000)] {
                let mut v = keys(n, seed + n as u64, distinct);
                let mut want: Vec<u64> = v.iter().map(|k| k.0).collect();
                want.sort_unstable();
                sort_slice(&mut v, |a, b| a.0.cmp(&b.0));
                assert_eq!(v.iter().map(|k| k.0).collect::<Vec<_>>(), want, "n={n}");
                // A permutation: every original index once.
                let mut idx: Vec<usize> = v.iter().map(|k| k.1).collect();
                idx.sort_unstable();
                assert_eq!(idx, (0..n).collect::<Vec<_>>());
            }
            // Sorted, reversed and constant inputs take the other paths.
            let mut v: Vec<usize> = (0..n).rev().collect();
            sort_slice(&mut v, |a, b| a.cmp(b));
            assert_eq!(v, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn up_to_twelve_is_stable_past_that_not() {
        // Insertion sort below 13 elements keeps equal keys in input order.
        let mut v: Vec<(u8, usize)> = (0..12).map(|i| ((i % 2) as u8, i)).collect();
        sort_slice(&mut v, |a, b| a.0.cmp(&b.0));
        assert_eq!(
            v.iter().map(|k| k.1).collect::<Vec<_>>(),
            vec![0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11]
        );
        // 13 elements: the quicksort path, traced by hand through Go's pdqsort_func: the
        // median of indices 3, 6, 9 is index 3 (key 1); the partition swaps it to the front,
        // then pairs (1,12), (5,10), (7,8), and puts the pivot back at 7; both halves are
        // then insertion-sorted without moves.
        let mut v: Vec<(u8, usize)> = (0..13).map(|i| ((i % 2) as u8, i)).collect();
        sort_slice(&mut v, |a, b| a.0.cmp(&b.0));
        let order: Vec<usize> = v.iter().map(|k| k.1).collect();
        assert_eq!(order, vec![8, 12, 2, 0, 4, 10, 6, 3, 7, 9, 5, 11, 1]);
    }

    /// Orders of equal keys as an independent transcription of Go's `sort.Slice` (written in
    /// Python from Go's zsortfunc.go while porting) leaves them, on inputs that reach the
    /// median-of-three, ninther, partial insertion sort, equal-partition and pattern-breaking
    /// paths.
    #[test]
    fn equal_keys_end_where_go_leaves_them() {
        let cases: &[(usize, u64, u64, &[usize])] = &[
            (13, 3, 2, &[5, 1, 12, 6, 3, 4, 0, 7, 8, 9, 10, 11, 2]),
            (
                20,
                5,
                4,
                &[
                    7, 13, 12, 10, 4, 9, 15, 2, 19, 17, 3, 0, 16, 14, 11, 6, 5, 1, 18, 8,
                ],
            ),
            (
                33,
                11,
                6,
                &[
                    29, 6, 13, 22, 3, 17, 5, 7, 16, 15, 14, 8, 20, 32, 10, 1, 26, 21, 18, 27, 9, 4,
                    11, 31, 24, 30, 0, 12, 28, 19, 25, 23, 2,
                ],
            ),
            (
                50,
                17,
                9,
                &[
                    12, 1, 2, 48, 43, 36, 34, 29, 25, 22, 13, 35, 6, 10, 45, 15, 18, 17, 47, 19, 0,
                    11, 39, 14, 28, 33, 3, 5, 24, 46, 23, 44, 9, 26, 40, 8, 4, 16, 32, 37, 21, 41,
                    42, 38, 31, 7, 27, 30, 20, 49,
                ],
            ),
            (
                64,
                23,
                5,
                &[
                    32, 55, 38, 25, 50, 42, 22, 58, 8, 35, 31, 56, 21, 39, 1, 53, 16, 17, 27, 26,
                    20, 30, 62, 23, 4, 3, 19, 51, 28, 49, 14, 47, 12, 57, 43, 9, 63, 41, 2, 45, 24,
                    59, 36, 34, 44, 10, 11, 13, 54, 18, 52, 40, 0, 15, 48, 33, 46, 29, 7, 37, 60,
                    61, 6, 5,
                ],
            ),
            (
                100,
                29,
                7,
                &[
                    87, 56, 65, 99, 67, 43, 62, 34, 32, 31, 73, 26, 16, 41, 36, 58, 12, 54, 53, 64,
                    2, 82, 81, 4, 44, 77, 88, 76, 40, 29, 72, 17, 5, 33, 55, 89, 86, 85, 90, 1, 63,
                    49, 48, 38, 78, 23, 66, 20, 42, 97, 19, 28, 52, 39, 37, 96, 8, 57, 15, 75, 35,
                    13, 59, 21, 50, 60, 18, 98, 68, 69, 11, 94, 46, 92, 74, 0, 27, 91, 24, 95, 47,
                    22, 51, 3, 84, 80, 14, 83, 79, 10, 9, 25, 30, 93, 71, 70, 7, 6, 45, 61,
                ],
            ),
            (
                200,
                31,
                3,
                &[
                    67, 196, 2, 3, 193, 191, 186, 185, 183, 9, 182, 181, 12, 174, 14, 173, 169,
                    168, 164, 163, 161, 159, 158, 150, 24, 147, 139, 27, 135, 134, 131, 128, 32,
                    123, 34, 35, 121, 37, 120, 119, 118, 116, 111, 43, 107, 106, 102, 47, 99, 98,
                    95, 86, 85, 84, 54, 55, 82, 81, 58, 59, 79, 75, 74, 73, 64, 72, 151, 166, 68,
                    198, 70, 197, 65, 1, 62, 195, 194, 189, 78, 60, 188, 6, 56, 83, 8, 52, 10, 11,
                    180, 89, 90, 178, 92, 93, 94, 50, 96, 97, 177, 176, 175, 101, 46, 172, 170, 16,
                    17, 44, 108, 109, 110, 165, 112, 18, 19, 20, 41, 117, 160, 39, 38, 36, 21, 22,
                    124, 125, 157, 155, 142, 141, 138, 30, 132, 133, 29, 28, 45, 105, 130, 26, 140,
                    129, 31, 143, 144, 145, 146, 25, 148, 149, 23, 0, 152, 153, 154, 127, 156, 126,
                    33, 122, 40, 115, 162, 114, 113, 42, 137, 66, 48, 167, 104, 171, 103, 15, 13,
                    100, 136, 49, 91, 179, 88, 87, 51, 53, 184, 7, 57, 187, 80, 77, 190, 5, 192, 4,
                    76, 61, 63, 71, 69, 199,
                ],
            ),
        ];
        for (n, seed, distinct, want) in cases {
            let mut v = keys(*n, *seed, *distinct);
            sort_slice(&mut v, |a, b| a.0.cmp(&b.0));
            let got: Vec<usize> = v.iter().map(|k| k.1).collect();
            assert_eq!(&got, want, "n={n} seed={seed}");
        }
    }
}
