package pages

import (
	"html/template"
	"time"
)

// PageData is everything a waiting-room template sees, the built-in one
// (assets/room.html) and an operator's (event.Page.Template): a plain
// value with no functions, so executing a template only reads it. The
// docs/api.md (Pages, the shop's own page) lists these as the template variables.
//
// On the live page the visitor's own figures (State, Position, Ahead, ETA)
// are empty: the page is rendered once per event version and language and
// served to everyone. The runtime ({{.Runtime}}) fills them in the elements
// with the documented ids and sets <html data-state>, so a template can
// show parts per state with CSS. In a console preview they hold the sample
// of the state previewed.
type PageData struct {
	// Lang is the page's language as an HTML lang value (en, zh-Hans, es,
	// ja, de, hi, ar); Dir is "ltr" or "rtl".
	Lang, Dir string
	// Languages are the switcher's choices.
	Languages []PageLanguage
	// T is the language's messages with the event's copy applied, by key
	// (the keys of web/pages/i18n/en.json): {{index .T "join"}}.
	T map[string]string
	// Event is the sale as the public sees it.
	Event PageEvent
	// Brand is the shop's branding.
	Brand PageBrand
	// State is the visitor's state: prequeue, waiting, admitted, sold_out,
	// not_selected, paused or closed; "" before joining.
	State string
	// Position and Ahead are the visitor's place and the people before it.
	Position, Ahead int64
	// ETASeconds is the estimated wait; ETA the same as text ("~5 min").
	ETASeconds int64
	ETA        string
	// Countdown is the next instant the page counts down to.
	Countdown PageCountdown
	// Fairness is the draw's verification data.
	Fairness PageFairness
	// Preview is true in the console's preview.
	Preview bool
	// Runtime is the page's script and its input; put it once, at the end
	// of <body>. Without it the page is static.
	Runtime template.HTML
}

// PageLanguage is one choice of the language switcher.
type PageLanguage struct {
	Code, Tag, Name string
	// Current marks the page's language.
	Current bool
}

// PageEvent is the public part of the sale's configuration.
type PageEvent struct {
	ID, Name, Mode string
	// State is the sale's public phase: upcoming, prequeue, open,
	// sold_out or closed.
	State  string
	Paused bool
	// Closed is true while staff have the room closed (event.Closure);
	// ClosedMessage is their message ("": the catalog's roomClosed).
	Closed                                            bool
	ClosedMessage                                     string
	Supply, PerUserLimit                              int64
	PrequeueOpensAt, StartsAt, WindowClosesAt, EndsAt time.Time
}

// PageBrand is the shop's branding; colours are #rrggbb or empty.
type PageBrand struct {
	Name                      string
	LogoURL                   template.URL // https or data:image, checked on save
	Primary, Background, Text string
	// Muted (secondary text), Surface (code, the progress track) and
	// OnPrimary (a button's label) are worked out from the brand's
	// colours to keep WCAG 2.2 AA contrast; empty without brand colours.
	Muted, Surface, OnPrimary string
}

// PageCountdown is what the page counts down to: Label is the message
// ("Sale starts in"), Until the instant; zero after the end.
type PageCountdown struct {
	Label string
	Until time.Time
}

// PageFairness is the published seed commitment and, once the window has
// closed, the seed and the window size.
type PageFairness struct {
	Commitment, Seed string
	WindowSize       int64
}
