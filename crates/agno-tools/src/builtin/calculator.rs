//! The `calculator` toolkit: Agno's `CalculatorTools` (arithmetic, powers, factorial, primality,
//! square root), each returning `{"operation": ..., "result": ...}` as JSON text.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Function, ToolError, Toolkit};

/// Largest `n` whose factorial fits in an `f64` (171! overflows).
const MAX_FACTORIAL: i64 = 170;

/// Largest `n` whose factorial fits in a `u64`, reported as an exact integer.
const MAX_EXACT_FACTORIAL: i64 = 20;

/// Two operands.
#[derive(Debug, Deserialize, JsonSchema)]
struct Operands {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// An integer operand.
#[derive(Debug, Deserialize, JsonSchema)]
struct Integer {
    /// The integer to operate on.
    n: i64,
}

/// A real operand.
#[derive(Debug, Deserialize, JsonSchema)]
struct Number {
    /// The number to operate on.
    n: f64,
}

/// `{"operation": ..., "result": ...}`.
fn outcome(operation: &str, result: impl Into<Value>) -> Value {
    json!({ "operation": operation, "result": result.into() })
}

/// The outcome of a floating-point operation; infinities and NaN become an error.
fn finite(operation: &str, result: f64) -> Result<Value, ToolError> {
    if result.is_finite() {
        Ok(outcome(operation, result))
    } else {
        Err(ToolError::execution(format!("{operation} did not produce a finite number")))
    }
}

/// `n!`: an exact integer up to 20!, a float up to 170!, an error beyond.
fn factorial(n: i64) -> Result<Value, ToolError> {
    if n < 0 {
        return Err(ToolError::execution("factorial of a negative number is undefined"));
    }
    if n > MAX_FACTORIAL {
        return Err(ToolError::execution(format!(
            "factorial of {n} is too large to represent (the largest supported n is {MAX_FACTORIAL})"
        )));
    }
    if n <= MAX_EXACT_FACTORIAL {
        let exact: u64 = (1..=n.unsigned_abs()).product();
        return Ok(outcome("factorial", exact));
    }
    let approx = (1..=n).fold(1.0_f64, |acc, k| acc * k as f64);
    finite("factorial", approx)
}

/// `(a * b) mod m` without overflow.
fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) % u128::from(m)) as u64
}

/// `base^exp mod m`.
fn pow_mod(mut base: u64, mut exp: u64, m: u64) -> u64 {
    let mut acc = 1 % m;
    base %= m;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mul_mod(acc, base, m);
        }
        base = mul_mod(base, base, m);
        exp >>= 1;
    }
    acc
}

/// Deterministic Miller-Rabin for 64-bit integers (these witnesses cover every `u64`), so large
/// inputs answer at once instead of after billions of trial divisions.
fn is_prime(n: i64) -> bool {
    const WITNESSES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    let n = n.unsigned_abs();
    for p in WITNESSES {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let mut d = n - 1;
    let mut s = 0;
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    WITNESSES.iter().all(|&a| {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            return true;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                return true;
            }
        }
        false
    })
}

/// The calculator toolkit (name and id `calculator`), Agno's `CalculatorTools`: `add`,
/// `subtract`, `multiply`, `divide`, `exponentiate`, `factorial`, `is_prime` and `square_root`,
/// all on by default.
///
/// Each tool returns JSON text such as `{"operation":"addition","result":5.0}`. Division by zero,
/// negative factorials or square roots, and results that are not finite numbers are tool errors.
pub fn calculator() -> Toolkit {
    Toolkit::new("calculator")
        .tool(Function::new("add", "Add two numbers and return the result.", |args: Operands| async move {
            finite("addition", args.a + args.b)
        }))
        .tool(Function::new(
            "subtract",
            "Subtract the second number from the first and return the result.",
            |args: Operands| async move { finite("subtraction", args.a - args.b) },
        ))
        .tool(Function::new("multiply", "Multiply two numbers and return the result.", |args: Operands| async move {
            finite("multiplication", args.a * args.b)
        }))
        .tool(Function::new(
            "divide",
            "Divide the first number by the second and return the result.",
            |args: Operands| async move {
                if args.b == 0.0 {
                    return Err(ToolError::execution("division by zero is undefined"));
                }
                finite("division", args.a / args.b)
            },
        ))
        .tool(Function::new(
            "exponentiate",
            "Raise the first number to the power of the second and return the result.",
            |args: Operands| async move { finite("exponentiation", args.a.powf(args.b)) },
        ))
        .tool(Function::new(
            "factorial",
            "Calculate the factorial of a non-negative integer (at most 170).",
            |args: Integer| async move { factorial(args.n) },
        ))
        .tool(Function::new("is_prime", "Check whether an integer is a prime number.", |args: Integer| async move {
            Ok::<_, ToolError>(outcome("prime_check", is_prime(args.n)))
        }))
        .tool(Function::new(
            "square_root",
            "Calculate the square root of a non-negative number.",
            |args: Number| async move {
                if args.n < 0.0 {
                    return Err(ToolError::execution("square root of a negative number is undefined"));
                }
                finite("square_root", args.n.sqrt())
            },
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miller_rabin_agrees_with_trial_division_below_10000() {
        let trial = |n: i64| n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0);
        for n in -5..10_000 {
            assert_eq!(is_prime(n), trial(n), "n = {n}");
        }
    }

    #[test]
    fn large_primes_and_composites() {
        assert!(is_prime(9_223_372_036_854_775_783)); // Largest prime below 2^63.
        assert!(!is_prime(i64::MAX));
        assert!(!is_prime(3_215_031_751)); // Strong pseudoprime to bases 2, 3, 5 and 7.
    }

    #[test]
    fn factorial_switches_to_float_after_20() {
        assert_eq!(factorial(20).ok(), Some(outcome("factorial", 2_432_902_008_176_640_000_u64)));
        assert!(factorial(21).ok().and_then(|v| v["result"].as_f64()).is_some());
        assert!(factorial(170).is_ok());
        assert!(factorial(171).is_err());
    }
}
