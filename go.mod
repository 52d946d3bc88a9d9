module github.com/tunnelgate/tunnelgate

go 1.26.0
