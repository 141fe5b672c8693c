package node_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
)

// TestKeyRotationAudited: a rotation in the shared key directory is
// recorded in the staff audit, with the active kid before and after, by
// the nodes that observe it.
func TestKeyRotationAudited(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, KeyReload: 50 * time.Millisecond})
	nodetest.Start(t, cfg)
	nodetest.Start(t, cfg)
	audit := staff.NewAudit(r.Client(t))
	ctx := context.Background()
	ks, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	oldKid := ks.Active()
	newKid, err := ks.Rotate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var rot []staff.Entry
	nodetest.WaitFor(t, "the rotation in the audit", 5*time.Second, func() bool {
		all, err := audit.List(ctx, staff.Query{})
		if err != nil {
			t.Fatal(err)
		}
		rot = rot[:0]
		for _, e := range all {
			if e.Action == "keys.rotate" {
				rot = append(rot, e)
			}
		}
		return len(rot) > 0
	})
	// Once per key set however many nodes observe it: see
	// staff.TestAuditOnRedis (RecordOnce). A node that reloaded between
	// Rotate's two writes saw the new key published and not yet active
	// (keys.publish), and its rotation starts from there.
	before := string(rot[0].Before)
	whole := `{"active_kid":"` + oldKid + `","kids":["` + oldKid + `"]}`
	halfway := `{"active_kid":"` + oldKid + `","kids":` + kidsJSON(oldKid, newKid) + `}`
	if (before != whole && before != halfway) || !strings.Contains(string(rot[0].After), `"active_kid":"`+newKid+`"`) {
		t.Fatalf("rotation entries %+v", rot)
	}
}

// kidsJSON is the sorted kid list as keyState encodes it.
func kidsJSON(kids ...string) string {
	slices.Sort(kids)
	b, _ := json.Marshal(kids)
	return string(b)
}
