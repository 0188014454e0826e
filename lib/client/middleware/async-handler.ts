import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * An async middleware whose failure reaches the application's error handler on Express 4 as well: Express 5
 * does that for a rejected promise by itself, Express 4 would leave it unhandled.
 */
export function middleware(
  handler: (req: Request, res: Response, next: NextFunction) => Promise<void>,
): RequestHandler {
  return (req, res, next) => {
    handler(req, res, next).catch(next);
  };
}
