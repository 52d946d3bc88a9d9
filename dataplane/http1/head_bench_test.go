package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// browserHead is what a browser sends through Cloudflare: 20 fields
// besides Host (dataplane's BenchmarkProxy, req=browser).
const browserHead = "GET / HTTP/1.1\r\nHost: app.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36\r\n" +
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8\r\n" +
	"Accept-Language: en-US,en;q=0.9,de;q=0.8\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Cookie: session=7f3a9c2e5b1d4f8a6c0e2b4d6f8a0c2e4b6d8f0a; csrftoken=Yx8kQ2mP4vR7tW1zB5nC9dF3gH6jK0lM; theme=dark\r\n" +
	"Cf-Connecting-Ip: 203.0.113.42\r\nCf-Ray: 8f2b6c1d9e3a4f57-FRA\r\nCf-Visitor: {\"scheme\":\"https\"}\r\nCf-Ipcountry: DE\r\n" +
	"Cdn-Loop: cloudflare\r\nX-Forwarded-For: 203.0.113.42\r\nX-Forwarded-Proto: https\r\nReferer: https://app.example.com/dashboard\r\n" +
	"Sec-Ch-Ua: \"Google Chrome\";v=\"131\", \"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"\r\nSec-Ch-Ua-Mobile: ?0\r\n" +
	"Sec-Ch-Ua-Platform: \"Windows\"\r\nSec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-Site: same-origin\r\n" +
	"Upgrade-Insecure-Requests: 1\r\n\r\n"

// BenchmarkRequestHead measures what the server does with a request head
// before the handler runs: parse it and fill the request, as for each
// request on a kept-alive connection (the request and its header map
// reused), the head read whole in one read of the socket.
func BenchmarkRequestHead(b *testing.B) {
	for _, c := range []struct{ name, head string }{
		{"get", "GET /bench/path?x=1 HTTP/1.1\r\nHost: app.example.com\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"},
		{"browser", browserHead},
	} {
		b.Run(c.name, func(b *testing.B) {
			head := []byte(c.head)
			src := bytes.NewReader(head)
			br := bufio.NewReaderSize(src, 4096)
			var q requestHead
			r := &http.Request{Header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				src.Reset(head)
				br.Reset(src)
				br.Peek(1) // as the server waits for a request
				if err := readRequestHead(br, &q); err != nil {
					b.Fatal(err)
				}
				q.fill(r)
			}
		})
	}
}
