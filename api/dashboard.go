package api

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/gin-gonic/gin"
)

// web holds the dashboard: one page and its script and style, served by the API process
// itself, with nothing fetched from elsewhere.
//
//go:embed web
var web embed.FS

// dashboardPolicy keeps the page to its own origin: its script, style, API calls and feed.
const dashboardPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveDashboard registers the dashboard: the page at /, its files under /ui/. They need no
// token; the page asks for one and uses it for every API call and the feed.
func serveDashboard(r *gin.Engine) {
	files, err := fs.Sub(web, "web")
	if err != nil {
		panic("dashboard: " + err.Error()) // the embedded folder exists at build time
	}
	page, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic("dashboard: " + err.Error())
	}
	secure := func(c *gin.Context) {
		c.Header("Content-Security-Policy", dashboardPolicy)
		c.Header("X-Content-Type-Options", "nosniff")
		c.Header("Referrer-Policy", "no-referrer")
		c.Next()
	}
	r.GET("/", secure, func(c *gin.Context) { c.Data(http.StatusOK, "text/html; charset=utf-8", page) })
	r.Group("/ui", secure).StaticFS("/", http.FS(files))
}
