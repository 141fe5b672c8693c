// Package e2e proves the pages in a real browser: each test starts a whole
// anteroom node on loopback (real redis-server, in-process NATS JetStream)
// and drives the waiting room and the staff console in headless Chromium
// through chromedp, saving a screenshot of every page state it reaches.
//
// The package holds only tests. Chromium is expected at /usr/bin/chromium;
// without it the tests skip, except under CI=true, where they fail.
// Screenshots go to $ANTEROOM_ARTIFACTS/<test name> when that is set, else
// to the test's temporary directory; their paths are logged.
package e2e
