package pages

import (
	"context"
	"errors"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
)

// The fakes of web's page tests (web/session_test.go, web/page_test.go),
// for the renderer's own tests here.

// consoleSales is the node's view with one sale; other methods panic.
type consoleSales struct {
	sales
	sale *admission.Sale
}

func (f consoleSales) Get(id string) (*admission.Sale, bool) { return f.sale, id == f.sale.Config.ID }

func testSale() *admission.Sale {
	now := time.Now()
	return &admission.Sale{
		Config: event.Config{
			ID: "ev", Name: "test", Supply: 10, PerUserLimit: 1, Mode: event.FCFS,
			PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
			AdmitRatePerSecond: 10, Buckets: 1, Seed: "00ff", SeedCommitment: "abcd",
		},
		Reading:   admission.Reading{Frontier: 3, Joined: 5},
		Remaining: 7,
	}
}

// fakePages is a page store holding one event's pages.
type fakePages struct{ pages event.Pages }

func (f *fakePages) Pages(context.Context, string) (event.Pages, error) { return f.pages, nil }
func (f *fakePages) PutPages(context.Context, string, event.Pages) (event.Pages, error) {
	return event.Pages{}, errors.New("fakePages: read only")
}
