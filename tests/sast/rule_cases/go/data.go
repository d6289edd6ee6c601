package main

import (
	"crypto/des"
	"crypto/md5"
	"crypto/sha256"
	"crypto/tls"
	"os"
)

func digest(data, key []byte) {
	// ruleid: reviewflow-go-weak-crypto
	sum := md5.Sum(data)
	// ruleid: reviewflow-go-weak-crypto
	block, _ := des.NewCipher(key)
	// ok: reviewflow-go-weak-crypto
	good := sha256.Sum256(data)
	_, _, _ = sum, block, good
}

func client() {
	// ruleid: reviewflow-go-tls-insecure-skip-verify
	insecure := &tls.Config{InsecureSkipVerify: true}
	// ok: reviewflow-go-tls-insecure-skip-verify
	secure := &tls.Config{MinVersion: tls.VersionTLS12}
	_, _ = insecure, secure
}

// ruleid: reviewflow-go-hardcoded-secret
const apiKey = "AKIA4F9A8B7C6D5E4F3A"

func connect() {
	// ruleid: reviewflow-go-hardcoded-secret
	dbPassword := "s3cr3t-Pa55w0rd!"
	// ok: reviewflow-go-hardcoded-secret
	envPassword := os.Getenv("DB_PASSWORD")
	// ok: reviewflow-go-hardcoded-secret
	passwordField := "password"
	_, _, _ = dbPassword, envPassword, passwordField
}
