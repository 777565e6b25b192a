module github.com/poolkit/poolkit/benches

go 1.26

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/jackc/puddle/v2 v2.2.3
	github.com/libp2p/go-buffer-pool v0.1.0
	github.com/poolkit/poolkit v0.1.0
	github.com/stretchr/testify v1.11.1
	github.com/valyala/bytebufferpool v1.0.0
	go.uber.org/goleak v1.3.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/poolkit/poolkit/contrib/pgxmanager v0.1.0
	github.com/poolkit/poolkit/examples v0.1.0
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// Inside the repository, go.work ties the modules together, and these
// replaces keep the module buildable from a checkout with GOWORK=off. A
// consumer's build ignores them and fetches the versions required above.
replace github.com/poolkit/poolkit => ../

replace github.com/poolkit/poolkit/contrib/pgxmanager => ../contrib/pgxmanager

replace github.com/poolkit/poolkit/examples => ../examples
