// Package e2e proves the pages in a real browser: each test starts a whole
// anteroom node on loopback (real redis-server, in-process NATS JetStream)
// and drives the waiting room and the staff console in headless Chromium
// through chromedp, saving a screenshot of every page state it reaches.
//
// The package holds only tests. Chromium is expected at /usr/bin/chromium;
// without it the tests skip, except under CI=true, where they fail.
// Screenshots go to $ANTEROOM_ARTIFACTS/<test name> when that is set, else
// to the test's temporary directory; their paths are logged.
//
// Timing: a busy machine makes Chromium seconds slower, so no wait has a
// fixed budget for the machine (see nodetest.WaitFor): waitJS takes the
// scenario's own time and allows nodetest.Patience on top, and a sale
// whose moment (queue opening, start, a lane's start, an admission's end)
// the browser must reach first is scheduled nodetest.Lead(setupPace(...))
// ahead: setup measured on this machine now, never a fixed few seconds.
package e2e
