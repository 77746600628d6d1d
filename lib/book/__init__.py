"""What a chapter calls around the computations: notebook helpers (`chapter`), `results` files and `figures`,
`plotting`, the papers' numbers (`paper`) and the claims `scorecard`. How the book is built is in `lib.edition`."""
