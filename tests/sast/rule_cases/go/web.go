package main

import (
	"html/template"
	"net/http"
	"os"
	"path/filepath"
)

func download(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	// ruleid: reviewflow-go-path-traversal
	data, _ := os.ReadFile(filepath.Join("/srv/files", name))
	// ruleid: reviewflow-go-path-traversal
	http.ServeFile(w, r, "/srv/files/"+r.FormValue("file"))
	// ok: reviewflow-go-path-traversal
	safe, _ := os.ReadFile(filepath.Join("/srv/files", filepath.Base(name)))
	// ok: reviewflow-go-path-traversal
	index, _ := os.ReadFile("/srv/files/index.txt")
	w.Write(append(append(data, safe...), index...))
}

func proxy(w http.ResponseWriter, r *http.Request) {
	target := r.URL.Query().Get("url")
	// ruleid: reviewflow-go-ssrf
	resp, _ := http.Get(target)
	// ruleid: reviewflow-go-ssrf
	req, _ := http.NewRequest("POST", "http://"+r.FormValue("host")+"/hook", nil)
	// ok: reviewflow-go-ssrf
	status, _ := http.Get("https://status.example.invalid/health")
	_, _, _ = resp, req, status
}

func page(comment string) (template.HTML, template.HTML) {
	// ruleid: reviewflow-go-xss
	shown := template.HTML("<p>" + comment + "</p>")
	// ok: reviewflow-go-xss
	fixed := template.HTML("<p>loading</p>")
	return shown, fixed
}
