package inspector

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestRefusals: a request without the token, with a wrong one, with the
// token only in the fragment, with a foreign Host or Origin, or cross-site
// is refused with 401 or 403, and nothing reaches the endpoint.
func TestRefusals(t *testing.T) {
	up := startCatalog(t)
	p := startInspector(t, up.URL, 0)
	tok := p.s.Token()
	call := `{"tool":"lookup_order","input":"{\"orderId\":\"A-1001\"}","persona":{"verified":true,"externalId":"user_7"}}`
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
	}{
		{"page without token", "GET", "/", "", nil, 401},
		{"page with wrong token", "GET", "/?token=" + strings.Repeat("0", len(tok)), "", nil, 401},
		{"page with token in the fragment only", "GET", "/#token=" + tok, "", nil, 401},
		{"page with a token prefix", "GET", "/?token=" + tok[:10], "", nil, 401},
		{"asset without cookie", "GET", "/assets/app.js", "", nil, 401},
		{"API call without token", "POST", "/api/call", call, nil, 401},
		{"API call with token in the query", "POST", "/api/call?token=" + tok, call, nil, 401},
		{"API call with the cookie only", "POST", "/api/call", call, map[string]string{"Cookie": tokenCookie + "=" + tok}, 401},
		{"API call with wrong token", "POST", "/api/call", call, map[string]string{tokenHeader: "nope"}, 401},
		{"manifest without token", "GET", "/api/tools", "", nil, 401},
		{"diagnostics without token", "POST", "/api/diagnostics", "{}", nil, 401},
		{"check without token", "POST", "/api/check", "{}", nil, 401},
		{"foreign Host", "POST", "/api/call", call, map[string]string{tokenHeader: tok, "Host": "evil.example"}, 403},
		{"rebinding Host", "POST", "/api/call", call, map[string]string{tokenHeader: tok, "Host": "127.0.0.1.evil.example:80"}, 403},
		{"foreign Host on the page", "GET", "/?token=" + tok, "", map[string]string{"Host": "attacker.test"}, 403},
		{"foreign Origin", "POST", "/api/call", call, map[string]string{tokenHeader: tok, "Origin": "http://evil.example"}, 403},
		{"null Origin", "POST", "/api/call", call, map[string]string{tokenHeader: tok, "Origin": "null"}, 403},
		{"Origin of another local port", "POST", "/api/call", call, map[string]string{tokenHeader: tok, "Origin": "http://127.0.0.1:1"}, 403},
		{"cross-site fetch", "POST", "/api/call", call, map[string]string{tokenHeader: tok, "Sec-Fetch-Site": "cross-site"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, p.URL+c.path, strings.NewReader(c.body))
			for k, v := range c.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if len(resp.Cookies()) != 0 {
				t.Errorf("a refused request got a cookie")
			}
			if n := up.hits.Load(); n != 0 {
				t.Fatalf("the endpoint received %d request(s)", n)
			}
		})
	}
}

// TestTheTokenOpensThePage: the right token in the query serves the page
// and sets the HttpOnly, SameSite=Strict cookie its assets need (holding
// another value than the token: TestTheAssetCookieIsNoCredential); the page,
// its assets and the API's answers never carry the key.
func TestTheTokenOpensThePage(t *testing.T) {
	up := startCatalog(t)
	p := startInspector(t, up.URL, 0)
	resp, err := http.Get(p.URL + "/?token=" + p.s.Token())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "mediancheck inspect") {
		t.Fatalf("status %d: %.200s", resp.StatusCode, page)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Value == "" || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/assets/" {
		t.Fatalf("cookies %+v", cookies)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	seen := string(page)
	for _, asset := range []string{"/assets/app.js", "/assets/style.css"} {
		req, _ := http.NewRequest("GET", p.URL+asset, nil)
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("%s: status %d", asset, resp.StatusCode)
		}
		seen += string(b)
	}
	var tools, entry, hist map[string]any
	p.api(t, "/api/tools", nil, &tools)
	p.api(t, "/api/call", map[string]any{"tool": "lookup_order", "input": `{"orderId":"A-1001"}`}, &entry)
	p.api(t, "/api/history", nil, &hist)
	for _, v := range []any{tools, entry, hist} {
		b, _ := jsonText(v)
		seen += b
	}
	if strings.Contains(seen, testKey) || strings.Contains(seen, strings.TrimPrefix(testKey, "mk_test_")) {
		t.Fatal("the key reached the browser")
	}
}

// TestTheAssetCookieIsNoCredential: a browser sends a host's cookies to
// every port of it, so another local service the browser visits receives
// the asset cookie. Its value opens the page's static assets and nothing
// else: not the API (in the header or as the cookie), not the page.
func TestTheAssetCookieIsNoCredential(t *testing.T) {
	up := startCatalog(t)
	p := startInspector(t, up.URL, 0)
	resp, err := http.Get(p.URL + "/?token=" + p.s.Token())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %+v", cookies)
	}
	leaked := cookies[0].Value
	if leaked == p.s.Token() {
		t.Fatal("the asset cookie holds the run's token")
	}
	call := `{"tool":"lookup_order","input":"{\"orderId\":\"A-1001\"}"}`
	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
	}{
		{"the asset, with the cookie", "GET", "/assets/app.js", "", map[string]string{"Cookie": tokenCookie + "=" + leaked}, 200},
		{"an API call with the cookie's value as its token", "POST", "/api/call", call, map[string]string{tokenHeader: leaked}, 401},
		{"an API call with the cookie", "POST", "/api/call", call, map[string]string{"Cookie": tokenCookie + "=" + leaked}, 401},
		{"the manifest with the cookie's value as its token", "GET", "/api/tools", "", map[string]string{tokenHeader: leaked}, 401},
		{"the page with the cookie's value as its token", "GET", "/?token=" + leaked, "", nil, 401},
		{"the asset with the run's token as the cookie", "GET", "/assets/app.js", "", map[string]string{"Cookie": tokenCookie + "=" + p.s.Token()}, 401},
	} {
		req, _ := http.NewRequest(c.method, p.URL+c.path, strings.NewReader(c.body))
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %.200s", c.name, resp.StatusCode, c.status, body)
		}
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("the endpoint received %d request(s)", n)
	}
}

func TestListenIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "127.0.0.1", "localhost.evil.example:0"} {
		if l, err := Listen(addr); err == nil {
			l.Close()
			t.Errorf("Listen(%q) accepted a non-loopback address", addr)
		} else if !strings.Contains(err.Error(), "-listen") {
			t.Errorf("Listen(%q): %v", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		l, err := Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		if !strings.HasPrefix(l.Addr().String(), "127.") {
			t.Errorf("Listen(%q) listens on %s", addr, l.Addr())
		}
		l.Close()
	}
}

// TestListenKeepsTheCause: an address without a port is refused with the
// parser's *net.AddrError wrapped, not only its text.
func TestListenKeepsTheCause(t *testing.T) {
	_, err := Listen("127.0.0.1")
	var addrErr *net.AddrError
	if !errors.As(err, &addrErr) {
		t.Errorf("Listen(%q): %v (%T) does not wrap a *net.AddrError", "127.0.0.1", err, err)
	}
}
