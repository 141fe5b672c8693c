// Package connectors holds no Go code of its own: its folders are the
// application middleware that verifies anteroom admission tokens offline
// in other runtimes (node: Express/Connect on jose; python: WSGI and ASGI
// on PyJWT), and its tests run each one's own test suite in its real
// runtime against a real node (see README.md).
package connectors
