package playintegrity

import "testing"

// BenchmarkVerify is one whole verification of a genuine token: header
// pins, AES key unwrap, AES-GCM, ES256 verification, JSON, checks.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b)
	token := f.token(b, nil)
	b.SetBytes(int64(len(token)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.v.Verify(token, standard, Policy{}, f.now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefuseForgedAlg is the cost of refusing a token whose header
// names another algorithm: no key is used.
func BenchmarkRefuseForgedAlg(b *testing.B) {
	f := newFixture(b)
	token := rehead(f.token(b, nil), `{"alg":"dir","enc":"A256GCM"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.v.Verify(token, standard, Policy{}, f.now); err == nil {
			b.Fatal("passed")
		}
	}
}
