package deploy_test

import (
	"encoding/hex"
	"regexp"
	"testing"

	"github.com/anteroom/anteroom/tokens"
)

// requiredVar is compose's "${VAR:?message}": the stack does not start
// until the variable is set.
var requiredVar = regexp.MustCompile(`^\$\{(ANTEROOM_[A-Z_]+):\?[^}]+\}$`)

// TestNoUsableDefaultSecrets: the compose file makes the operator set the
// admin token and the ticket secret (no fallback value), and the
// placeholders in the Kubernetes Secret are refused by a node.
func TestNoUsableDefaultSecrets(t *testing.T) {
	services, _ := load(t, "compose.yaml")[0]["services"].(map[string]any)
	for _, svc := range []string{"anteroom-1", "anteroom-2", "worker"} {
		for _, v := range []string{"ANTEROOM_ADMIN_TOKEN", "ANTEROOM_TICKET_SECRET"} {
			got := getString(services, svc, "environment", v)
			if m := requiredVar.FindStringSubmatch(got); m == nil || m[1] != v {
				t.Errorf("compose %s %s = %q: want ${%s:?message}, no default", svc, v, got, v)
			}
		}
	}
	secret := load(t, "k8s/secret.yaml")[0]
	if err := tokens.CheckAdminToken(getString(secret, "stringData", "admin-token")); err == nil {
		t.Error("a node accepts the Kubernetes Secret's admin-token placeholder")
	}
	if b, err := hex.DecodeString(getString(secret, "stringData", "ticket-secret")); err == nil && tokens.CheckSecret(b) == nil {
		t.Error("a node accepts the Kubernetes Secret's ticket-secret placeholder")
	}
}
