// Package redirect is gpulab's HTTP redirect policy for servers the
// operator named (a Prometheus, an API server): a redirect stays on that
// server, a few hops at most.
package redirect

import (
	"fmt"
	"net/http"

	"github.com/gpulab/gpulab/internal/visible"
)

// SameHost returns an http.Client CheckRedirect that refuses a redirect
// to another scheme, host or port; what names the server in the error
// ("the API server", "prometheus") and why says why it matters.
func SameHost(what, why string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return fmt.Errorf("%s at %s redirected to %s://%s, another host: refused (%s)", what, first.Host, req.URL.Scheme, visible.String(req.URL.Host), why)
		}
		if len(via) >= 5 {
			return fmt.Errorf("%s at %s: more than 5 redirects", what, first.Host)
		}
		return nil
	}
}
