package testenv

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
)

// The users of a test cluster: the system user may ask what only the
// system account may (a meta leader step-down); clients without
// credentials are the app user, in the global account.
const (
	natsSystemUser     = "sys"
	natsSystemPassword = "anteroom-test-sys"
	natsAppUser        = "anteroom"
)

// StepDownMeta asks the JetStream meta leader to step down
// ($JS.API.META.LEADER.STEPDOWN, as the system user) and returns once a
// server has answered that it did; the cluster then elects another. It
// asks again through an election already under way, up to ctx's end.
func (c *NATSCluster) StepDownMeta(ctx context.Context) error {
	return c.stepDown(ctx, nats.UserInfo(natsSystemUser, natsSystemPassword), "$JS.API.META.LEADER.STEPDOWN")
}

// StepDownStream asks the leader of stream to step down
// ($JS.API.STREAM.LEADER.STEPDOWN.<stream>) and returns once it has
// answered that it did; the stream's replicas then elect another. It
// asks again through an election already under way, up to ctx's end.
func (c *NATSCluster) StepDownStream(ctx context.Context, stream string) error {
	return c.stepDown(ctx, nil, "$JS.API.STREAM.LEADER.STEPDOWN."+stream)
}

func (c *NATSCluster) stepDown(ctx context.Context, auth nats.Option, subject string) error {
	opts := []nats.Option{nats.Name("testenv step-down")}
	if auth != nil {
		opts = append(opts, auth)
	}
	nc, err := nats.Connect(c.URL(), opts...)
	if err != nil {
		return fmt.Errorf("testenv: %s: %w", subject, err)
	}
	defer nc.Close()
	// The request itself may land in the election a previous step-down
	// started: asked again like any JetStream request.
	err = jsretry.Do(ctx, func(ctx context.Context) error {
		m, err := nc.RequestWithContext(ctx, subject, nil)
		if err != nil {
			return err
		}
		var res struct {
			Success bool                `json:"success"`
			Error   *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &res); err != nil {
			return fmt.Errorf("answer %q: %w", m.Data, err)
		}
		if res.Error != nil {
			return res.Error
		}
		if !res.Success {
			return fmt.Errorf("answer %q", m.Data)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("testenv: %s: %w", subject, err)
	}
	return nil
}
