// Package kit is what every audience of anteroom's HTTP edge shares, and
// nothing else: problem+json errors and the one table that maps domain
// errors to them (errorRows, ToProblem, ErrorHandler), request ids, the
// client address behind trusted proxies, the bearer credential, JSON
// bodies in and out, the sale a request names (LoadSale, SaleOf), the
// request's clock (Clock) and the staff member a request was
// authenticated as (StaffOf).
//
// It owns one rule: errors become HTTP here, in order, and nowhere else;
// a handler returns an error (or a *Problem it built) and ErrorHandler
// answers it. Handlers live in the audience packages (shopper, protect,
// staffapi, pages) beside it, composed by package web.
package kit
