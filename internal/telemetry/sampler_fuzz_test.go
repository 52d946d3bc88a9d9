package telemetry

import "testing"

// Whatever the environment holds, the sampler parser answers with a
// sampler or an error naming the variable, and never panics.
func FuzzSamplerFrom(f *testing.F) {
	for _, c := range [][2]string{{"", ""}, {"traceidratio", "0.5"}, {"parentbased_traceidratio", "1e-3"},
		{"always_on", "x"}, {"TraceIdRatio", " 0.1 "}, {"traceidratio", "NaN"}, {"traceidratio", "-0"}, {"bogus", ""}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, name, arg string) {
		s, desc, err := samplerFrom(env("OTEL_TRACES_SAMPLER", name, "OTEL_TRACES_SAMPLER_ARG", arg))
		if (err == nil) == (s == nil) || (err == nil && desc == "") {
			t.Fatalf("%q %q: sampler %v, description %q, error %v", name, arg, s, desc, err)
		}
	})
}
