//! Go's `sort.SliceStable` (insertion sort in blocks of 20, then SymMerge).
//!
//! Strategic merge patch sorts list items with a comparator that is not a
//! strict order when an item is missing from the reference list; the result
//! then depends on the algorithm, so this follows Go's step for step.

pub(super) fn slice_stable<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let lt = |d: &[T], i: usize, j: usize| match (d.get(i), d.get(j)) {
        (Some(a), Some(b)) => less(a, b),
        _ => false,
    };
    let mut block = 20usize;
    let (mut a, mut b) = (0usize, block);
    while b <= n {
        insertion_sort(data, a, b, &lt);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &lt);
    while block < n {
        let (mut a, mut b) = (0usize, 2 * block);
        while b <= n {
            sym_merge(data, a, a + block, b, &lt);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, &lt);
        }
        block *= 2;
    }
}

type Less<'a, T> = &'a dyn Fn(&[T], usize, usize) -> bool;

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: Less<'_, T>) {
    for i in (a + 1)..b {
        let mut j = i;
        while j > a && less(data, j, j - 1) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: Less<'_, T>) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(data, h, a) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = a;
        while k + 1 < i {
            data.swap(k, k + 1);
            k += 1;
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(data, m, h) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(data, p - c, c) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let (mut i, mut j) = (m - a, b - m);
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_like_a_proper_sort_for_a_strict_order() {
        let mut v: Vec<(u32, usize)> = (0..200).map(|i| ((i * 7919 % 13) as u32, i)).collect();
        let mut expected = v.clone();
        expected.sort_by_key(|x| x.0);
        slice_stable(&mut v, |a, b| a.0 < b.0);
        assert_eq!(v, expected);
    }

    #[test]
    fn always_true_comparator_reverses_small_inputs_like_go() {
        // Go's insertion sort swaps every pair when less is always true.
        let mut v = vec![1, 2, 3];
        slice_stable(&mut v, |_, _| true);
        assert_eq!(v, vec![3, 2, 1]);
    }
}
