package hostmath

import "testing"

func TestBLASWarning(t *testing.T) {
	for _, tc := range []struct {
		coretype, kernels, cpu string
		warn                   bool
	}{
		{"Haswell", "Haswell", "AVX-512", true},
		{"", "Haswell", "AVX-512", true}, // chosen, not forced: still narrower
		{"", "Prescott", "AVX-512", true},
		{"", "SkylakeX", "AVX-512", false},
		{"", "Prescott", "SSE", false},
		{"SkylakeX", "SkylakeX", "AVX-512", false},
		{"Haswell", "Haswell", "AVX2", false},
		{"Haswell", "", "AVX-512", false}, // gonum
		{"zen", "Zen", "AVX-512", true},
	} {
		got := blasWarning(tc.coretype, tc.kernels, tc.cpu, false)
		if (got != "") != tc.warn {
			t.Errorf("%q %q %q: warning %q, want one %v", tc.coretype, tc.kernels, tc.cpu, got, tc.warn)
		}
	}
	if got := blasWarning("Haswell", "Haswell", "AVX-512", false); got != "OpenBLAS forced to Haswell (AVX2) kernels by OPENBLAS_CORETYPE; this CPU has AVX-512: its products run at about half speed" {
		t.Errorf("warning %q", got)
	}
	// With gpuz's own SGEMM running the large float32 products, the warning
	// names only what is left to OpenBLAS.
	if got, want := blasWarning("Haswell", "Haswell", "AVX-512", true), "OpenBLAS forced to Haswell (AVX2) kernels by OPENBLAS_CORETYPE; this CPU has AVX-512: the products left to it (float32 ones under 2^22 multiply-adds, float64 ones; gpuz's own kernels run the others) run at about half speed"; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
}

func TestBLASWarningUnrecognisedCPU(t *testing.T) {
	want := "OpenBLAS chose its Prescott (SSE3) kernels: it does not recognise this CPU, which has AVX-512; OPENBLAS_CORETYPE=SkylakeX runs its AVX-512 kernels"
	if got := blasWarning("", "Prescott", "AVX-512", true); got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
}
