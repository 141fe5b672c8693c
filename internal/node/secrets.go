package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/anteroom/anteroom/tokens"
)

// ticketSecret returns the configured ticket secret or the one in
// DataDir/ticket-secret, generating it there on first start. A file
// holding a weak secret (zeros, a pattern: see tokens.CheckSecret) is an
// error, not silently replaced: other nodes may share it.
func ticketSecret(cfg *Config) ([]byte, error) {
	if cfg.TicketSecret != nil {
		return cfg.TicketSecret, nil // checked by validate
	}
	path := filepath.Join(cfg.DataDir, "ticket-secret")
	secret, err := tokens.LoadOrCreateSecret(path)
	if err != nil {
		return nil, err
	}
	if err := tokens.CheckSecret(secret); err != nil {
		return nil, fmt.Errorf("refusing to start: ticket secret in %s: %w", path, err)
	}
	return secret, nil
}

// adminToken returns the configured admin token or the one in
// DataDir/admin-token, generating 24 random bytes (48 hex digits) there
// when the file is missing or empty. A file holding a weak token (see
// tokens.CheckAdminToken) is an error.
func adminToken(cfg *Config) (string, error) {
	if cfg.AdminToken != "" {
		return cfg.AdminToken, nil // checked by validate
	}
	path := filepath.Join(cfg.DataDir, "admin-token")
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if tok := strings.TrimSpace(string(b)); tok != "" {
		if err := tokens.CheckAdminToken(tok); err != nil {
			return "", fmt.Errorf("refusing to start: admin token in %s: %w", path, err)
		}
		return tok, nil
	}
	var r [24]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	cfg.Log.Info("admin token generated", "file", path)
	return tok, nil
}
