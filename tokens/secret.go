package tokens

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadOrCreateSecret returns the HMAC secret stored at path, creating it if
// the file does not exist.
//
// Format: the file holds the secret as hex text (lower or upper case);
// surrounding whitespace, such as a trailing newline, is ignored. A decoded
// secret shorter than [MinSecretLen] bytes is an error, as is a file that is
// not hex.
//
// A new secret is 32 bytes from crypto/rand written as 64 lowercase hex
// digits and a newline, mode 0600; missing parent directories are created
// with mode 0700. Creation is exclusive: when several processes sharing the
// directory start at once, exactly one secret is written and all of them
// return it.
func LoadOrCreateSecret(path string) ([]byte, error) {
	secret, err := readSecret(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tokens: create secret directory: %w", err)
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("tokens: generate secret: %w", err)
	}
	text := []byte(hex.EncodeToString(fresh) + "\n")
	err = writeFileAtomic(dir, name, text, 0o600, true)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("tokens: write secret: %w", err)
	}
	// Either ours or the one another process created first.
	return readSecret(path)
}

func readSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: read secret: %w", err)
	}
	text := bytes.TrimSpace(data)
	secret := make([]byte, hex.DecodedLen(len(text)))
	if _, err := hex.Decode(secret, text); err != nil {
		return nil, fmt.Errorf("tokens: secret file %s is not hex: %w", path, err)
	}
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("tokens: secret in %s is %d bytes, want at least %d", path, len(secret), MinSecretLen)
	}
	return secret, nil
}
