package claim

import (
	"errors"
	"fmt"
)

// Signal limits: a claim may carry per-person signals (a device, a payment
// instrument, a phone, a shipping address), each as a keyed hash the edge
// computed from a value it trusts, never the value itself. claim.lua counts
// the claims held with each signal value in a set under the bucket's hash
// tag, in the same script call that decides the claim, so two users sharing
// a signal cannot both pass by claiming at the same moment, on one Redis or
// a Redis Cluster alike. A release gives the count back, as it does the
// user's. The sets expire at Request.SignalsUntil.
//
// Every key a signal limit touches carries its bucket's hash tag, so a
// signal value is counted per bucket: a sale that limits signals has one
// bucket (event.Config refuses the others at save).

// Signal is one per-person signal of a claim.
type Signal struct {
	// Dim names the signal: device, payment, phone or address.
	Dim string
	// Hash is the value's keyed hash (hex), the set's name: never the raw
	// value.
	Hash string
	// Max is how many claims one value may hold at once, at least 1.
	Max int64
}

// ErrSignalLimit is returned (wrapped in a *SignalLimitError) when a
// signal value of the claim holds its allowed claims already.
var ErrSignalLimit = errors.New("claim: signal limit reached")

// SignalLimitError names the signal whose limit refused a claim.
type SignalLimitError struct{ Dim string }

// Error names the signal.
func (e *SignalLimitError) Error() string {
	return fmt.Sprintf("%v: %s", ErrSignalLimit, e.Dim)
}

// Unwrap makes errors.Is(err, ErrSignalLimit) true.
func (e *SignalLimitError) Unwrap() error { return ErrSignalLimit }

// signal is the key of the set of claim ids held with signal value hash
// of dimension dim.
func (k bucketKeys) signal(dim, hash string) string { return k.tag + "sig:" + dim + ":" + hash }
