//go:build drills

package drills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/nats-io/nats-server/v2/server"
)

// TestDrill3NATSServerKill stops, mid-sale, the server of a three-server
// NATS cluster that leads the order stream (replicas 3): publishes wait for
// a new stream leader, claims meanwhile answer 503 and are retried with
// the same keys. The sale runs to its end on the two others; then the
// stopped server comes back and must catch up.
func TestDrill3NATSServerKill(t *testing.T) {
	d := newDrill(t, 3, "nats-server-kill",
		"at 6 s the order stream's leadership (R3, cluster of 3 from `testenv.StartNATSCluster`) is moved to the server node-a publishes through, "+
			"and that server is shut down (in-process server: `Shutdown`, its store stays on disk); "+
			"the sale finishes on the other two; then it is restarted; "+
			"360 shoppers buy 500 units (limit 2 each) from two nodes connected to the whole cluster")
	r := testenv.StartRedis(t)
	nc := testenv.StartNATSCluster(t, 3)
	dp := newDeployment(t)
	cfg := node.Config{RedisURL: r.URL(), NATSURL: nc.URL(), StreamReplicas: 3}
	a := dp.startNode(t, "node-a", loopback(t), cfg)
	b := dp.startNode(t, "node-b", loopback(t), cfg)
	const ev = "natskill"
	spec := saleSpec{supply: 500, limit: 2, rate: 12, buckets: 4}
	dp.createSale(t, ev, spec, a.URL(), b.URL())

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	c := newCrowd(crowdConfig{Event: ev, URLs: []string{a.URL(), b.URL()}, Users: 360, Spread: 3 * time.Second, Keys: 3, TwinShare: 0.1,
		Timeouts: []time.Duration{2 * time.Second, 6 * time.Second}})
	start := time.Now()
	crowdDone := c.start(ctx)
	d.phase("crowd started")

	wait.Sleep(ctx, time.Until(start.Add(6*time.Second)))
	// The worst server to lose is the one that leads the order stream and
	// that a node publishes through: move the leadership there first.
	target := a.JS.Conn().ConnectedServerName()
	moved := moveStreamLeader(a, target)
	leader := -1
	for i := range 3 {
		if s := nc.Server(i); s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, claim.StreamName) {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader of the order stream")
	}
	if moved != nil {
		d.note("Moving the stream leadership to node-a's server failed (%v); the drill stopped the leader as it was.", moved)
	}
	connected := []string{a.JS.Conn().ConnectedServerName(), b.JS.Conn().ConnectedServerName()}
	atKill := totals(ctx, t, a.Redis(), claim.Sale{ID: ev, Buckets: spec.buckets})
	ackedAtKill := len(c.snapshot())
	before := c.claimOutcomes()
	stoppedAt := time.Now()
	nc.Stop(leader)
	d.phase("stopped %s, the stream leader (granted so far %d, %d acknowledged)", nc.Node(leader).Server().Name(), atKill.Granted, ackedAtKill)
	newLeader := waitStreamLeader(ctx, nc, leader)
	electedIn := time.Since(stoppedAt)
	d.phase("new stream leader %s after %s", newLeader, electedIn.Round(10*time.Millisecond))
	wait.Sleep(ctx, 3*time.Second)
	around := subtract(c.claimOutcomes(), before)

	crowdDone()
	elapsed := time.Since(start)
	d.phase("crowd done")
	if ctx.Err() != nil {
		d.check("sale finished in time", false, "the crowd was still running after %s", elapsed.Round(time.Second))
	}
	au := d.audit(ctx, sale{ev: ev, onSale: spec.supply, limit: spec.limit, buckets: spec.buckets, rdb: a.Redis(), js: a.JS}, c)

	nc.Restart(t, leader)
	restarted := nc.Server(leader)
	want := streamMsgs(nc.Server((leader + 1) % 3))
	deadline := time.Now().Add(30 * time.Second)
	got := streamMsgs(restarted)
	for got != want && time.Now().Before(deadline) {
		wait.Sleep(ctx, 100*time.Millisecond)
		want, got = streamMsgs(nc.Server((leader+1)%3)), streamMsgs(restarted)
	}
	d.check("the stopped server caught up", got == want && want > 0, "after its restart it holds %d order events, the others %d", got, want)

	d.figure("units", "%d on sale; %d granted (stream), %d remaining in Redis", spec.supply, au.granted, au.redis.Remaining)
	d.figure("fault", "stopped %s (stream leader; the nodes were connected to %v) at %d grants and %d acknowledged claims; new stream leader %s after %s",
		restarted.Name(), connected, atKill.Granted, ackedAtKill, newLeader, electedIn.Round(10*time.Millisecond))
	d.figure("claim answers in the 3 s after the stop and the election", "%s", outcomesLine(around))
	d.crowdFigures(c)
	honest, timeouts, _, _ := d.refusalCheck(c)
	d.summary = fmt.Sprintf("%s; stream leader stopped at %d grants, new leader in %s; %d claims refused 503, %d client timeouts; restarted server caught up (%d events)",
		au.line(spec.supply), atKill.Granted, electedIn.Round(10*time.Millisecond), honest, timeouts, got)
}

// moveStreamLeader asks JetStream to hand the order stream's leadership to
// the server named to, and waits until it leads.
func moveStreamLeader(n *inproc, to string) error {
	if leader, err := streamLeader(n); err == nil && leader == to {
		return nil
	}
	body := fmt.Sprintf(`{"placement":{"preferred":%q}}`, to)
	msg, err := n.JS.Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN."+claim.StreamName, []byte(body), 5*time.Second)
	if err != nil {
		return err
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return err
	}
	if !resp.Success {
		if resp.Error != nil {
			return errors.New(resp.Error.Description)
		}
		return errors.New("step-down refused")
	}
	return wait.Until(10*time.Second, 50*time.Millisecond, func() error {
		if leader, err := streamLeader(n); err == nil && leader == to {
			return nil
		}
		return fmt.Errorf("%s did not become the stream leader", to)
	})
}

// streamLeader names the server leading the order stream.
func streamLeader(n *inproc) (string, error) {
	info, err := n.JS.Conn().Request("$JS.API.STREAM.INFO."+claim.StreamName, nil, time.Second)
	if err != nil {
		return "", err
	}
	var si struct {
		Cluster struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(info.Data, &si); err != nil {
		return "", err
	}
	return si.Cluster.Leader, nil
}

// waitStreamLeader waits until a server other than old leads the order
// stream and returns its name.
func waitStreamLeader(ctx context.Context, nc *testenv.NATSCluster, old int) string {
	for ctx.Err() == nil {
		for i := range 3 {
			if s := nc.Server(i); i != old && s != nil && s.Running() && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, claim.StreamName) {
				return s.Name()
			}
		}
		wait.Sleep(ctx, 20*time.Millisecond)
	}
	return "none"
}

// streamMsgs returns how many messages s's own replica of the order stream
// holds.
func streamMsgs(s *server.Server) uint64 {
	info, err := s.Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		return 0
	}
	for _, acc := range info.AccountDetails {
		for _, st := range acc.Streams {
			if st.Name == claim.StreamName {
				return st.State.Msgs
			}
		}
	}
	return 0
}
