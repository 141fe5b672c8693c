package event

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Pages is an event's waiting-room page as stored: the draft staff preview
// and the published one the live page shows. It is kept apart from the
// Config, which every node re-reads several times a second, so a page's
// kilobytes cost nothing there: the Config carries only PageVersion, the
// version at which the page was published.
type Pages struct {
	Draft     *Page `json:"draft,omitempty"`
	Published *Page `json:"published,omitempty"`
	// Version increases with every save. PublishedVersion is the Version
	// at which Published was set; 0 when nothing is published.
	Version          int64 `json:"version"`
	PublishedVersion int64 `json:"published_version,omitempty"`
}

//go:embed page_put.lua
var pagePutLua string

func pagesKey(id string) string { return "ar:{" + id + "}:page" }

// Pages returns the stored pages of event id; the zero Pages when none
// were saved.
func (s *Store) Pages(ctx context.Context, id string) (Pages, error) {
	raw, err := s.rdb.HGet(ctx, pagesKey(id), "json").Bytes()
	if errors.Is(err, redis.Nil) {
		return Pages{}, nil
	}
	if err != nil {
		return Pages{}, fmt.Errorf("event %s: pages: %w", id, err)
	}
	var p Pages
	if err := json.Unmarshal(raw, &p); err != nil {
		return Pages{}, fmt.Errorf("event %s: pages: decode: %w", id, err)
	}
	return p, nil
}

// PutPages stores p for event id if the stored version is still p.Version
// (a compare-and-set, like Put), and returns it with its new version; a
// concurrent save makes it return ErrConflict.
func (s *Store) PutPages(ctx context.Context, id string, p Pages) (Pages, error) {
	expect := p.Version
	p.Version++
	raw, err := json.Marshal(p)
	if err != nil {
		return Pages{}, err
	}
	ok, err := s.putPage.Run(ctx, s.rdb, []string{pagesKey(id)}, expect, raw).Int64()
	if err != nil {
		return Pages{}, fmt.Errorf("event %s: put pages: %w", id, err)
	}
	if ok != 1 {
		return Pages{}, ErrConflict
	}
	return p, nil
}
