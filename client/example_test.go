package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/plantstore/plantstore/client"
)

// Create a plant, change it only if nobody else did, and walk every plant.
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken("dev-token"))
	if err != nil {
		log.Fatal(err)
	}
	tag := "tropical"
	if err := c.Create(ctx, client.Plant{ID: 1, Name: "Monstera", Tag: &tag}); err != nil {
		log.Fatal(err) // errors.Is(err, client.ErrConflict): id 1 holds another plant
	}
	p, err := c.Get(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	p.Name = "Monstera deliciosa"
	if _, err := c.Update(ctx, p, p.ETag); errors.Is(err, client.ErrPreconditionFailed) {
		fmt.Println("changed by someone else meanwhile; read it again")
	} else if err != nil {
		log.Fatal(err)
	}
	for p, err := range c.All(ctx, client.ListOptions{Limit: 1000}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.ID, p.Name)
	}
}

// Keep a copy of the plants tagged "tropical" equal to the store's: Follow
// lists, follows the change feed and starts over by itself when its cursor
// is gone; the caller only applies the events.
func ExampleClient_Follow() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken("dev-token"))
	if err != nil {
		log.Fatal(err)
	}
	tag := "tropical"
	plants := map[int64]client.Plant{}
	for ev, err := range c.Follow(ctx, client.FollowOptions{Tag: &tag}) {
		if err != nil {
			log.Fatal(err) // ctx ended, or the server refused for good
		}
		switch ev.Kind {
		case client.Added, client.Changed:
			plants[ev.Plant.ID] = ev.Plant
		case client.Removed:
			delete(plants, ev.Plant.ID)
		case client.InSync:
			fmt.Println(len(plants), "tropical plants, as the store holds them")
		}
	}
}

// The same by hand, for a caller that needs the feed's changes themselves:
// list the plants, then follow the change feed from the first page's
// cursor; list again when the cursor falls out of the server's retention
// window.
func ExampleClient_Changes() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken("dev-token"))
	if err != nil {
		log.Fatal(err)
	}
	for {
		plants := map[int64]client.Plant{}
		var cursor string
		for next := &(client.ListOptions{Limit: 1000}); next != nil; {
			page, err := c.List(ctx, *next)
			if err != nil {
				log.Fatal(err)
			}
			if cursor == "" {
				cursor = page.ChangesCursor // the first page's: nothing after it is missed
			}
			for _, p := range page.Plants {
				plants[p.ID] = p
			}
			next = page.Next
		}
		for ch, err := range c.Changes(ctx, cursor, client.ChangesOptions{}) {
			if errors.Is(err, client.ErrCursorGone) {
				break // list again
			}
			if err != nil {
				log.Fatal(err)
			}
			if ch.Type == client.PlantDeleted {
				delete(plants, ch.ID)
			} else {
				plants[ch.ID] = *ch.Plant
			}
		}
	}
}
