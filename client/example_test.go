package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/tokens"
)

// A shopper's app: join, wait for the turn at the node's pace, claim.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := client.New("https://queue.shop.example")
	if err != nil {
		log.Fatal(err)
	}
	t, err := c.Join(ctx, "spring-drop")
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.Wait(ctx, "spring-drop", t.Ticket, func(s client.Status) {
		fmt.Println("position", s.Position, "eta", s.ETA)
	})
	if err != nil {
		log.Fatal(err)
	}
	if s.State != client.StateAdmitted {
		fmt.Println("not this time:", s.State)
		return
	}
	cl, err := c.Claim(ctx, "spring-drop", s.AdmissionToken, "")
	switch {
	case errors.Is(err, client.ErrSoldOut):
		fmt.Println("sold out")
	case errors.Is(err, client.ErrLimitReached):
		var e *client.Error
		errors.As(err, &e)
		fmt.Println("you already hold", e.ClaimIDs)
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("claimed", cl.ID)
	}
}

// A service behind the waiting room checks the admission token its caller
// presents, offline.
func ExampleVerifier() {
	v, err := client.NewVerifier(client.VerifierConfig{JWKSURL: "https://queue.shop.example/.well-known/jwks.json"})
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/checkout", func(w http.ResponseWriter, r *http.Request) {
		raw, _ := bearer(r)
		adm, err := v.Verify(r.Context(), raw, "spring-drop")
		var keysErr *client.KeysError
		switch {
		case errors.As(err, &keysErr):
			http.Error(w, "try again", http.StatusServiceUnavailable) // fail closed
		case errors.Is(err, tokens.ErrWrongEvent):
			http.Error(w, "not for this sale", http.StatusForbidden)
		case err != nil:
			http.Error(w, "not admitted", http.StatusUnauthorized)
		default:
			fmt.Fprintln(w, "welcome,", adm.User)
		}
	})
}

func bearer(r *http.Request) (string, bool) {
	const p = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(p) || h[:len(p)] != p {
		return "", false
	}
	return h[len(p):], true
}
