//! memcached's default slab classes (`-n 48 -f 1.25`, 512 KiB largest chunk), used only to
//! report items the way memcached groups them (`me ... cls=`, `stats items`, `stats slabs`).

/// Chunk sizes of memcached's slab classes, class 1 first.
fn sizes() -> impl Iterator<Item = u32> {
    let mut size: u32 = 96;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        if size as f64 >= 524_288.0 / 1.25 {
            done = true;
            return Some(524_288);
        }
        let aligned = size.div_ceil(8) * 8;
        size = (aligned as f64 * 1.25) as u32;
        Some(aligned)
    })
}

/// The class memcached would store an item of `size` bytes in.
pub fn class_of(size: usize) -> u32 {
    let mut last = 1;
    for (i, s) in sizes().enumerate() {
        last = i as u32 + 1;
        if size <= s as usize {
            return last;
        }
    }
    last
}

/// Chunk size of class `cls`.
pub fn class_size(cls: u32) -> u32 {
    sizes().nth(cls.saturating_sub(1) as usize).unwrap_or(524_288)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcached_classes() {
        assert_eq!(class_size(1), 96);
        assert_eq!(class_size(2), 120);
        assert_eq!(class_size(3), 152);
        assert_eq!(class_of(61), 1);
        assert_eq!(class_of(97), 2);
        assert_eq!(class_of(400_000), 39);
    }
}
