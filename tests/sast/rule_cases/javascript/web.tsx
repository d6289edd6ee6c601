import React from "react";

export function Comment(props: { html: string }) {
  // ruleid: reviewflow-js-xss
  const shown = <div dangerouslySetInnerHTML={{ __html: props.html }} />;
  // ok: reviewflow-js-xss
  const plain = <div>{props.html}</div>;
  const el = document.getElementById("out") as HTMLElement;
  // ruleid: reviewflow-js-xss
  el.outerHTML = props.html;
  return [shown, plain];
}
