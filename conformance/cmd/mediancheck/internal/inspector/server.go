package inspector

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/protocol"
)

//go:embed assets
var assets embed.FS

// Config is what an inspector needs.
type Config struct {
	URL     string        // the endpoint, mount path included
	Key     string        // the Median key calls are signed with; never sent to the page
	Timeout time.Duration // bounds each request to the endpoint; 0: 30 seconds
	HTTP    *http.Client  // nil: a client that follows no redirect
}

// Server serves the inspector page and its API for one run.
type Server struct {
	cfg    Config
	client *wire.Client
	token  string // the run's token: the page's URL and every API call carry it
	// assetToken is the asset cookie's value, apart from token: a browser
	// sends a cookie to every port of its host, so any other local
	// service the browser visits receives it, and it must open nothing
	// but the page's static assets.
	assetToken string

	mu      sync.Mutex
	history []*entry       // this run's calls, oldest first
	tools   []wire.Tool    // the manifest last read
	bodies  map[int][]byte // request bodies by entry number, for replay
}

// maxHistory is how many calls a run keeps; older ones are dropped.
const maxHistory = 500

// New checks cfg and returns a Server with a fresh random token.
func New(cfg Config) (*Server, error) {
	if cfg.URL == "" {
		return nil, errors.New("-url is required: the endpoint's address with its mount path, e.g. http://127.0.0.1:8080/api/median")
	}
	key, err := protocol.ParseKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("the key is not usable: %w", err)
	}
	return &Server{
		cfg:        cfg,
		client:     &wire.Client{URL: cfg.URL, Key: key, HTTP: cfg.HTTP, Timeout: cfg.Timeout},
		token:      randomToken(),
		assetToken: randomToken(),
		bodies:     map[int][]byte{},
	}, nil
}

// randomToken returns 24 random bytes in hex.
func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (and crashes the program instead)
	return hex.EncodeToString(b)
}

// Token is this run's token.
func (s *Server) Token() string { return s.token }

// PageURL is the address of the page for a listener at addr, token
// included: the URL to open.
func (s *Server) PageURL(addr net.Addr) string {
	return "http://" + addr.String() + "/?token=" + s.token
}

// Handler serves the page, its assets and its API, every request guarded
// (see the package doc).
func (s *Server) Handler() http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.assetToken, Path: "/assets/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		page, _ := assets.ReadFile("assets/index.html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	mux.HandleFunc("GET /api/tools", s.serveTools)
	mux.HandleFunc("POST /api/validate", s.serveValidate)
	mux.HandleFunc("POST /api/call", s.serveCall)
	mux.HandleFunc("POST /api/replay", s.serveReplay)
	mux.HandleFunc("GET /api/history", s.serveHistory)
	mux.HandleFunc("GET /api/export", s.serveExport)
	mux.HandleFunc("POST /api/diagnostics", s.serveDiagnostics)
	mux.HandleFunc("POST /api/check", s.serveCheck)
	return s.guard(mux)
}
