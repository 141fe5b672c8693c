package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
)

// StreamName is the JetStream stream of lifecycle events, next to the
// order stream (ANTEROOM_ORDERS).
const StreamName = "ANTEROOM_LIFECYCLE"

// Subject returns the subject of a lifecycle event of type typ for sale ev:
// anteroom.lifecycle.<sale>.<type>.
func Subject(ev, typ string) string { return "anteroom.lifecycle." + ev + "." + typ }

// DuplicateWindow is how long JetStream remembers an event id: nodes
// publishing the same outbox entry usually do so within milliseconds; a
// node stalled longer stores a copy again (see the package doc).
const DuplicateWindow = 2 * time.Minute

// EnsureStream creates or updates the lifecycle stream: limits retention,
// kept 30 days, duplicates rejected within DuplicateWindow; through a
// leader election (internal/jsretry).
func EnsureStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	err := jsretry.Do(ctx, func(ctx context.Context) error {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:       StreamName,
			Subjects:   []string{"anteroom.lifecycle.>"},
			Retention:  jetstream.LimitsPolicy,
			Storage:    jetstream.FileStorage,
			MaxAge:     30 * 24 * time.Hour,
			Duplicates: DuplicateWindow,
			Replicas:   max(replicas, 1),
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("lifecycle stream: %w", err)
	}
	return nil
}

// WithSubjects asks stream info for the per-subject counts of sale ev.
func WithSubjects(ev string) jetstream.StreamInfoOpt {
	return jetstream.WithSubjectFilter(Subject(ev, ">"))
}
