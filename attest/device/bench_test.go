package device_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/attest/attesttest"
	"github.com/anteroom/anteroom/attest/device"
)

// BenchmarkCheckApple is one join's or claim's App Attest check on a real
// Redis: the key read, the assertion's signature check and assert.lua.
// The assertions are made before the timer starts.
func BenchmarkCheckApple(b *testing.B) {
	r := newRig(b, single(b))
	d := r.registered(b)
	reqs := make([]device.Request, 0, b.N)
	for i := range b.N {
		reqs = append(reqs, r.appleReq(b, d, uint32(i+1), `{"a":1}`))
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := r.svc.Check(context.Background(), r.sale, reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegisterApple is one App Attest key's registration: the
// attestation object's chain and checks, and register.lua.
func BenchmarkRegisterApple(b *testing.B) {
	r := newRig(b, single(b))
	type reg struct {
		d   *attesttest.Device
		ch  string
		obj []byte
	}
	regs := make([]reg, b.N)
	for i := range regs {
		d := attesttest.NewDevice(b)
		ch := r.svc.Challenge("ev", time.Now())
		regs[i] = reg{d, ch, r.ca.Attest(b, d, appID, ch)}
	}
	b.ResetTimer()
	for _, g := range regs {
		if _, err := r.svc.RegisterApple(context.Background(), r.sale, g.d.KeyID(), g.obj, g.ch); err != nil {
			b.Fatal(err)
		}
	}
}
