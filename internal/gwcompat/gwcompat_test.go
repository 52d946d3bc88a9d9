package gwcompat

import (
	"encoding/json"
	"testing"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		changed        bool
	}{
		{"cookie, v1.6",
			`{"spec":{"rules":[{"sessionPersistence":{"sessionName":"s","type":"Cookie","absoluteTimeout":"1h","cookieConfig":{"lifetimeType":"Permanent"}}}]}}`,
			`{"spec":{"rules":[{"sessionPersistence":{"absoluteTimeout":"1h","cookie":{"lifetimeType":"Permanent","name":"s"},"type":"Cookie"}}]}}`, true},
		{"type defaults to Cookie",
			`{"spec":{"rules":[{"sessionPersistence":{"sessionName":"s"}}]}}`,
			`{"spec":{"rules":[{"sessionPersistence":{"cookie":{"name":"s"}}}]}}`, true},
		{"header, v1.6",
			`{"spec":{"rules":[{"sessionPersistence":{"sessionName":"X-S","type":"Header"}}]}}`,
			`{"spec":{"rules":[{"sessionPersistence":{"header":{"name":"X-S"},"type":"Header"}}]}}`, true},
		{"cookieConfig alone",
			`{"spec":{"rules":[{"sessionPersistence":{"cookieConfig":{}}},{"sessionPersistence":{"cookieConfig":{"lifetimeType":"Session"}}}]}}`,
			`{"spec":{"rules":[{"sessionPersistence":{"cookie":{}}},{"sessionPersistence":{"cookie":{"lifetimeType":"Session"}}}]}}`, true},
		{"the new shape wins",
			`{"spec":{"rules":[{"sessionPersistence":{"sessionName":"old","cookie":{"name":"new","lifetimeType":"Session"},"cookieConfig":{"lifetimeType":"Permanent"}}}]}}`,
			`{"spec":{"rules":[{"sessionPersistence":{"cookie":{"lifetimeType":"Session","name":"new"}}}]}}`, true},
		{"v1.7 untouched",
			`{"spec":{"rules":[{"sessionPersistence":{"cookie":{"name":"s","path":"/"}}},{}]}}`,
			`{"spec":{"rules":[{"sessionPersistence":{"cookie":{"name":"s","path":"/"}}},{}]}}`, false},
		{"no rules", `{"spec":{}}`, `{"spec":{}}`, false},
		{"odd shapes left for the decoder", `{"spec":{"rules":[1,{"sessionPersistence":"x"}]}}`, `{"spec":{"rules":[1,{"sessionPersistence":"x"}]}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := json.Unmarshal([]byte(tc.in), &obj); err != nil {
				t.Fatal(err)
			}
			if got := Route(obj); got != tc.changed {
				t.Errorf("changed = %v, want %v", got, tc.changed)
			}
			b, _ := json.Marshal(obj)
			if string(b) != tc.want {
				t.Errorf("\n got %s\nwant %s", b, tc.want)
			}
		})
	}
}
