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

// integerTypes are the pflag value types that decimalFlags makes decimal.
var integerTypes = map[string]bool{
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true,
}

// decimalFlags makes every integer flag of cmd and of the commands under
// it read decimal digits (decimalValue), as the list flags do: pflag reads
// Go literals, where --warmup 010 is 8 and --seed 0x10 is 16. A flag added
// later is covered too.
func decimalFlags(cmd *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(decimalValue); !done && integerTypes[f.Value.Type()] {
			f.Value = decimalValue{f.Value}
		}
	}
	cmd.Flags().VisitAll(wrap)
	cmd.PersistentFlags().VisitAll(wrap)
	for _, c := range cmd.Commands() {
		decimalFlags(c)
	}
}
