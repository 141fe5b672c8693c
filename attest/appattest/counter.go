package appattest

import (
	"context"
	"fmt"
)

// CounterStore keeps the last assertion counter of each attested key. The
// caller implements it over its own storage: a Redis script
// (GET, compare, SET in one EVAL), a SQL "UPDATE … SET counter = $2 WHERE
// key_id = $1 AND counter < $2".
type CounterStore interface {
	// AdvanceCounter stores counter as keyID's last counter if it is
	// greater than the one stored, in one atomic step, and reports
	// whether it did.
	AdvanceCounter(ctx context.Context, keyID []byte, counter uint32) (bool, error)
}

// Advance stores counter, the result of [Verifier.VerifyAssertion], as
// keyID's last counter through store. It returns an error wrapping
// [ErrReplay] when the store already holds that counter or a greater one:
// another request carrying the same assertion, or a later one, was
// verified meanwhile and went first.
func Advance(ctx context.Context, store CounterStore, keyID []byte, counter uint32) error {
	ok, err := store.AdvanceCounter(ctx, keyID, counter)
	if err != nil {
		return fmt.Errorf("appattest: store counter: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w: counter %d was already passed", ErrReplay, counter)
	}
	return nil
}
