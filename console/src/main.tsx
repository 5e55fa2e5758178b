// Boot: the stylesheet and the shell. Everything else (each page) is loaded lazily by the router.
import { render } from "preact";
import { App } from "./app/App";
import "./styles.css";

const root = document.getElementById("app");
if (root !== null) {
  render(<App />, root);
}
