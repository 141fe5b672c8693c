package tokens_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/anteroom/anteroom/tokens"
)

// ExampleIssuer mints an admission token for one user and verifies it as
// every node (and a gateway holding the JWKS) does: at the right event it
// carries the user and position; at another event, or after it expires,
// it is refused with the sentinel the HTTP layer maps.
func ExampleIssuer() {
	dir, err := os.MkdirTemp("", "keys")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	keys, err := tokens.OpenKeyDir(dir) // makes a first Ed25519 key
	if err != nil {
		fmt.Println(err)
		return
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{})

	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	raw, _, err := iss.Issue("sneaker-drop", "user-42", 17, 5*time.Minute, now)
	if err != nil {
		fmt.Println(err)
		return
	}

	a, err := iss.Verify(raw, "sneaker-drop", now.Add(time.Minute))
	fmt.Println(a.User, a.Pos, a.ExpiresAt.Format(time.Kitchen), err)

	_, err = iss.Verify(raw, "other-sale", now.Add(time.Minute))
	fmt.Println("other event:", errors.Is(err, tokens.ErrWrongEvent))

	_, err = iss.Verify(raw, "sneaker-drop", now.Add(time.Hour))
	fmt.Println("an hour later:", errors.Is(err, tokens.ErrInvalid))
	// Output:
	// user-42 17 9:05AM <nil>
	// other event: true
	// an hour later: true
}
