package staff

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Passwords are hashed with argon2id in the PHC string format,
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>
//
// with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane); the
// parameters are read back from each hash, so they may be raised later
// without invalidating stored ones.
const (
	argonMemory  = 19 * 1024
	argonTime    = 2
	argonThreads = 1
	argonLen     = 32
	// MinPassword is the shortest password an account may have.
	MinPassword = 12
	maxPassword = 256
)

// dummyHash is checked against when an account does not exist, so a
// sign-in takes as long either way.
var dummyHash = mustHash("anteroom-no-such-account")

func mustHash(p string) string {
	h, err := hashPassword(p)
	if err != nil {
		panic(err)
	}
	return h
}

// Password is a password hashed with argon2id for Accounts.Create; the
// zero Password is none.
type Password struct{ hash string }

// HashPassword hashes p, which must have MinPassword to 256 characters.
// It is CPU work (tens of milliseconds, seconds on a busy machine): do it
// before starting a request's deadline for Redis, not under it.
func HashPassword(p string) (Password, error) {
	h, err := hashPassword(p)
	return Password{hash: h}, err
}

func hashPassword(p string) (string, error) {
	if len(p) < MinPassword || len(p) > maxPassword {
		return "", fmt.Errorf("staff accounts: a password has %d to %d characters", MinPassword, maxPassword)
	}
	var salt [16]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return "", err
	}
	h := argon2.IDKey([]byte(p), salt[:], argonTime, argonMemory, argonThreads, argonLen)
	b := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, b.EncodeToString(salt[:]), b.EncodeToString(h)), nil
}

func checkPassword(encoded, p string) bool {
	if len(p) > maxPassword {
		return false
	}
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m, t uint32
	var th uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &th); err != nil || m > 1<<20 || t > 10 || th == 0 {
		return false
	}
	b := base64.RawStdEncoding
	salt, err1 := b.DecodeString(parts[4])
	want, err2 := b.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(p), salt, t, m, th, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
