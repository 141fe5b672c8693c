package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OrderCancelled is the lifecycle event of a claim staff cancelled (the
// sweep's cancellations): one per claim, id <sale>.order_cancelled.<claim
// id>, delivered to the sale's webhooks like the others, signed. Its data:
// claim_id, user, reason, restock, was (pending or confirmed), by (staff).
const OrderCancelled = "order_cancelled"

// Cancellation is what an order_cancelled event says.
type Cancellation struct {
	Event, ClaimID, User, Reason, Was, By string
	Restock                               bool
	At                                    time.Time
}

// PublishCancelled publishes c's order_cancelled event on the lifecycle
// stream with Nats-Msg-Id = its id and waits for JetStream to store it:
// publishing it again (the order outbox's sweeper after a node died)
// within DuplicateWindow stores it once, and the Deliverer's marker per
// webhook and id answers a webhook once after that.
func PublishCancelled(ctx context.Context, js jetstream.JetStream, c Cancellation) error {
	e := Event{ID: c.Event + "." + OrderCancelled + "." + c.ClaimID, Type: OrderCancelled, Event: c.Event, AtUnixMs: c.At.UnixMilli(),
		Data: map[string]any{"claim_id": c.ClaimID, "user": c.User, "reason": c.Reason, "restock": c.Restock, "was": c.Was, "by": c.By}}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("lifecycle %s: %w", c.Event, err)
	}
	msg := &nats.Msg{Subject: Subject(c.Event, OrderCancelled), Data: body, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, e.ID)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("lifecycle %s: publish %s: %w", c.Event, e.ID, err)
	}
	return nil
}
