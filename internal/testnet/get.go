package testnet

import (
	"io"
	"net/http"
)

// GetWithToken sends GET url with http.DefaultClient, presenting token
// as "Authorization: Bearer TOKEN" unless token is empty, and returns
// the response's status code and body. When the request fails, it
// returns code 0 and the error's text as the body, so a test can poll a
// server that is not up yet and report what went wrong in one line.
func GetWithToken(url, token string) (code int, body string) {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
