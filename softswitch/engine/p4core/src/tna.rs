//! The Tofino (TNA) externs the built-in target provides for programs that
//! softswitch-p4c lowers from TNA (softswitch_p4c/tna_lower.py). Only what has
//! no v1model counterpart lives here; the lowering maps the rest (Register,
//! RegisterAction, Random, Counter, Checksum) onto the v1model primitives.

/// One sample of TNA's `Lpf` in SAMPLE mode (the low-pass filter of the
/// traffic-manager-independent MAU): `avg + (sample - avg)(1 - e^(-dt/tau))`,
/// `dt` the time since the previous sample of the same index. The lowering
/// keeps `avg`, the previous time and `tau` in registers; this is the math.
///
/// Modelled exactly in real arithmetic and rounded to the nearest integer;
/// Tofino's own fixed-point precision is not public (hw/tofino/README.md).
/// `tau_ns == 0` (an unconfigured index) passes the sample through.
pub fn lpf_sample(avg: i128, sample: i128, dt_us: i128, tau_ns: i128) -> i128 {
    if tau_ns <= 0 {
        return sample;
    }
    let weight = -(-(dt_us.max(0) as f64) * 1000.0 / tau_ns as f64).exp_m1();
    avg + ((sample - avg) as f64 * weight).round() as i128
}

#[cfg(test)]
mod tests {
    use super::lpf_sample;

    #[test]
    fn one_time_constant_closes_1_minus_1_over_e_of_the_gap() {
        // 1 - e^-1 = 0.6321205588...
        assert_eq!(lpf_sample(0, 1_000_000, 10, 10_000), 632_121);
        assert_eq!(lpf_sample(1_000_000, 0, 10, 10_000), 1_000_000 - 632_121);
    }

    #[test]
    fn a_small_step_weighs_like_the_ewma_weight() {
        // dt/tau = 2^-9: weight 1 - e^-w = w (1 - w/2 + ...)
        let tau = 512_000;
        let w = 1.0 / 512.0;
        let expect = (1e9 * (-(-w as f64).exp_m1())).round() as i128;
        assert_eq!(lpf_sample(0, 1_000_000_000, 1, tau), expect);
        assert!((expect as f64 / (1e9 * w) - 1.0).abs() < w / 2.0 + 1e-6);
    }

    #[test]
    fn no_elapsed_time_keeps_the_average_and_a_long_gap_takes_the_sample() {
        assert_eq!(lpf_sample(777, 5_000, 0, 1_000), 777);
        assert_eq!(lpf_sample(777, 5_000, 1_000_000, 1_000), 5_000);
    }

    #[test]
    fn an_unconfigured_index_passes_the_sample_through() {
        assert_eq!(lpf_sample(777, 5_000, 3, 0), 5_000);
    }
}
