package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// errNotDecimal is the error for an integer flag's value that is not a
// whole number in decimal digits.
var errNotDecimal = errors.New("want a whole number in decimal digits")

// decimalDigits checks that s is a whole number in decimal digits, an
// optional sign first, and returns it without leading zeros ("-010" is
// "-10", "000" is "0"), so that a parser of Go literals reads it as
// decimal. Go's other literals (0x10, 0o10, 0b1, 1_0) are errNotDecimal.
// It is the one reading of every integer flag: single-value ones
// (decimalFlags) and the list flags (parseWhole).
func decimalDigits(s string) (string, error) {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, digits = s[:1], s[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", errNotDecimal
	}
	if digits = strings.TrimLeft(digits, "0"); digits == "" {
		digits = "0"
	}
	if sign == "+" {
		sign = ""
	}
	return sign + digits, nil
}

// parseWhole reads a list flag's value: a whole number in decimal digits
// (decimalDigits) that fits an int.
func parseWhole(s string) (int, error) {
	d, err := decimalDigits(s)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(d)
	if err != nil {
		return 0, errors.New("want a whole number in decimal digits that fits 64 bits")
	}
	return n, nil
}

// decimalValue is an integer flag's value read in decimal: the value it
// wraps (pflag's, which reads Go literals) is given the digits without
// their leading zeros.
type decimalValue struct{ pflag.Value }

// Set checks that s is decimal and sets the wrapped value to it.
func (v decimalValue) Set(s string) error {
	d, err := decimalDigits(s)
	if err != nil {
		return err
	}
	return v.Value.Set(d)
}

// errNotDecimalFloat is the error for a float flag's value that is not a
// number in decimal digits with an optional fraction and exponent.
var errNotDecimalFloat = errors.New("want a decimal number (digits, an optional fraction and exponent, as 1e-4 or 0.5)")

// decimalFloat checks that s is a number written in decimal: an optional
// sign, digits with an optional fraction (at least one digit in all), and
// an optional exponent of decimal digits. Go's other float literals
// (0x1p3, 1_0e-4) are errNotDecimalFloat: strconv reads 1_0e-4 as 1e-3
// and 0x1p3 as 8. The words inf, infinity and nan pass, so that the check
// of finite values (finiteFloatFlags) names them.
func decimalFloat(s string) error {
	rest := strings.TrimLeft(s, "+-")
	switch strings.ToLower(rest) {
	case "inf", "infinity", "nan":
		return nil
	}
	if len(s)-len(rest) > 1 {
		return errNotDecimalFloat
	}
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(rest), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := func(d string) bool { return strings.Trim(d, "0123456789") == "" }
	if whole+frac == "" || !digits(whole) || !digits(frac) {
		return errNotDecimalFloat
	}
	if hasExp {
		if e := strings.TrimLeft(exp, "+-"); e == "" || len(exp)-len(e) > 1 || !digits(e) {
			return errNotDecimalFloat
		}
	}
	return nil
}

// decimalFloatValue is a float flag's value read in decimal (decimalFloat).
type decimalFloatValue struct{ pflag.Value }

// Set checks that s is a decimal number and sets the wrapped value to it.
func (v decimalFloatValue) Set(s string) error {
	if err := decimalFloat(s); err != nil {
		return err
	}
	return v.Value.Set(s)
}

// integerTypes are the pflag value types that decimalFlags makes decimal.
var integerTypes = map[string]bool{
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true,
}

// decimalFlags makes every integer flag of cmd and of the commands under
// it read decimal digits (decimalValue), as the list flags do: pflag reads
// Go literals, where --warmup 010 is 8 and --seed 0x10 is 16. Every float
// flag reads decimal numbers (decimalFloatValue): --lr 1_0e-4 was 1e-3.
// A flag added later is covered too.
func decimalFlags(cmd *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		switch f.Value.(type) {
		case decimalValue, decimalFloatValue:
			return
		}
		switch t := f.Value.Type(); {
		case integerTypes[t]:
			f.Value = decimalValue{f.Value}
		case t == "float32" || t == "float64":
			f.Value = decimalFloatValue{f.Value}
		}
	}
	cmd.Flags().VisitAll(wrap)
	cmd.PersistentFlags().VisitAll(wrap)
	for _, c := range cmd.Commands() {
		decimalFlags(c)
	}
}
