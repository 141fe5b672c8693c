package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
)

// keyWatch records key rotations in the staff audit. Rotation is a CLI on
// the shared key directory (`anteroom keys rotate|retire`), which need not
// reach Redis; so every node, on start and on each reload, looks at the
// signing keys it serves, and the first node to see a new set (active kid
// and published kids) records it once for the deployment. The entry names
// who observed it ("key directory"), not who ran the command: shell access
// to the key directory is outside the staff accounts.
type keyWatch struct {
	audit *staff.Audit
	keys  *tokens.KeySet
	last  keyState
}

type keyState struct {
	Active string   `json:"active_kid"`
	Kids   []string `json:"kids"`
}

func newKeyWatch(audit *staff.Audit, keys *tokens.KeySet) *keyWatch {
	return &keyWatch{audit: audit, keys: keys}
}

// observe records the key set if it changed since this node last looked
// and no node has recorded it yet.
func (w *keyWatch) observe(ctx context.Context) error {
	now := keyState{Active: w.keys.Active(), Kids: w.keys.Kids()}
	slices.Sort(now.Kids)
	if now.Active == w.last.Active && slices.Equal(now.Kids, w.last.Kids) {
		return nil
	}
	action := "keys.rotate"
	switch {
	case w.last.Active == "":
		action = "keys.observed" // first sight on this node: a new deployment, or a change made while it was down
	case now.Active == w.last.Active && len(now.Kids) > len(w.last.Kids):
		// A rotation seen half-way: `anteroom keys rotate` writes the new
		// key before it makes it active, so a node reloading in between
		// sees it published and not yet signing; the rotation follows.
		action = "keys.publish"
	case now.Active == w.last.Active:
		action = "keys.retire"
	}
	e := staff.Entry{Who: "key directory", Role: "", Action: action}
	if w.last.Active != "" {
		e.Before, _ = json.Marshal(w.last)
	}
	e.After, _ = json.Marshal(now)
	sum := sha256.Sum256([]byte(now.Active + "|" + strings.Join(now.Kids, ",")))
	if _, err := w.audit.RecordOnce(ctx, "keys:"+hex.EncodeToString(sum[:12]), e); err != nil {
		return err
	}
	w.last = now
	return nil
}
