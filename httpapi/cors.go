package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/lodestream/lodestream/config"
)

// cors applies [http.cors] (spec §13) as the outermost layer: it answers
// preflights itself and adds the headers to every response.
type cors struct {
	anyOrigin        bool
	origins          []string
	methods, headers string
	exposed          string
	credentials      bool
	privateNetwork   bool
}

var standardMethods = []string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "CONNECT", "PATCH", "TRACE"}

// newCORS checks the section (boot errors as upstream's) and returns nil
// when disabled.
func newCORS(c config.HTTPCORSConfig) (*cors, error) {
	if !c.Enabled {
		return nil, nil
	}
	out := &cors{credentials: c.AllowCredentials, privateNetwork: c.AllowPrivateNetwork}
	var methods []string
	for _, m := range c.AllowedMethods {
		m = strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(standardMethods, m) {
			return nil, errorf("http.cors.allowed_methods: %q is not a standard HTTP method", m)
		}
		methods = append(methods, m)
	}
	out.methods = strings.Join(methods, ",")
	for i, o := range c.AllowedOrigins {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			continue
		case o == "*" && i == 0:
			out.anyOrigin = true
		case o == "*":
			return nil, errorf("http.cors.allowed_origins: \"*\" must be the first entry")
		case !out.anyOrigin:
			out.origins = append(out.origins, o)
		}
	}
	out.headers = strings.Join(c.AllowedHeaders, ",")
	out.exposed = strings.Join(c.ExposedHeaders, ",")
	if out.credentials && (out.anyOrigin || out.headers == "*" || out.exposed == "*") {
		return nil, errorf("http.cors.allow_credentials = true cannot be combined with a wildcard origin, header or exposed header")
	}
	return out, nil
}

func (c *cors) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		h := w.Header()
		h.Add("Vary", "Origin")
		allowed := c.anyOrigin || (origin != "" && slices.Contains(c.origins, origin))
		if allowed {
			if c.anyOrigin {
				h.Set("Access-Control-Allow-Origin", "*")
			} else {
				h.Set("Access-Control-Allow-Origin", origin)
			}
			if c.credentials {
				h.Set("Access-Control-Allow-Credentials", "true")
			}
			if c.exposed != "" {
				h.Set("Access-Control-Expose-Headers", c.exposed)
			}
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if allowed {
				h.Set("Access-Control-Allow-Methods", c.methods)
				if c.headers != "" {
					h.Set("Access-Control-Allow-Headers", c.headers)
				}
				if c.privateNetwork && r.Header.Get("Access-Control-Request-Private-Network") == "true" {
					h.Set("Access-Control-Allow-Private-Network", "true")
				}
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		next.ServeHTTP(w, r)
	})
}
