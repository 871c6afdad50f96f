package httpapi

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// webUI serves a web console build from http.web_ui_dir at /ui (spec §4):
// files by path, index.html for paths without a dot (client-side routes),
// 404 "Not Found" for a missing asset. Same origin as the API: no CORS
// set-up is needed.
func (s *Server) webUI() (http.Handler, error) {
	dir := s.cfg.HTTP.WebUIDir
	if dir == "" {
		return nil, errorf("http.web_ui = true needs http.web_ui_dir: the directory of a web console build (its index.html)")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, errorf("http.web_ui_dir = %q: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(root, "index.html")); err != nil {
		return nil, errorf("http.web_ui_dir = %q has no index.html: %w", dir, err)
	}
	fsys := http.Dir(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rel := strings.TrimPrefix(path.Clean("/"+r.PathValue("path")), "/")
		if rel == "" || rel == "." {
			rel = "index.html"
		}
		f, err := fsys.Open("/" + rel)
		if err == nil {
			st, serr := f.Stat()
			if serr == nil && !st.IsDir() {
				defer f.Close()
				http.ServeContent(w, r, st.Name(), st.ModTime(), f)
				return
			}
			f.Close()
		}
		if strings.Contains(path.Base(rel), ".") {
			writePlain(w, http.StatusNotFound, "Not Found")
			return
		}
		http.ServeFile(w, r, filepath.Join(root, "index.html"))
	}), nil
}
